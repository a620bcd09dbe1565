// A package in Supabase Storage as the farm reads it for android_install_app's apk_object: GET
// `/object/authenticated/<bucket>/<path>` with the caller's own token and the anon key, so RLS on
// storage.objects decides (docs/farm.md "Android devices"). Never with a service key.
import { FarmError, type PackageObject } from '@capture/farm';
import type { CallerStorage } from '../mcp/tool-definition.ts';

/** The object's URL: each path segment encoded, so the path approved is the path fetched. */
export function storageObjectUrl(storage: CallerStorage, bucket: string, path: string): string {
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  return `${storage.url}/object/authenticated/${encodeURIComponent(bucket)}/${encoded}`;
}

/** The farm's object source for `bucket/path`, read as the caller once the install runs. */
export function callerPackageObject(
  storage: CallerStorage,
  object: { bucket: string; path: string; sha256?: string | undefined },
): PackageObject {
  const shown = `${object.bucket}/${object.path}`;
  return {
    bucket: object.bucket,
    path: object.path,
    sha256: object.sha256?.toLowerCase(),
    async open(signal) {
      let response: Response;
      try {
        response = await fetch(storageObjectUrl(storage, object.bucket, object.path), {
          headers: { authorization: `Bearer ${storage.accessToken}`, apikey: storage.apikey },
          signal,
          redirect: 'error',
        });
      } catch (error) {
        if (signal.aborted) throw error;
        throw new FarmError('unavailable', `Storage could not be reached for ${shown}.`, {
          cause: error,
        });
      }
      if (response.status === 400 || response.status === 404) {
        // Storage answers an object that is missing and one the caller may not read alike.
        await response.body?.cancel();
        throw new FarmError(
          'not_found',
          `No object ${shown} that you may read in Storage (it is missing, or its bucket's ` +
            'policies do not let you read it); nothing was installed.',
        );
      }
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel();
        throw new FarmError(
          response.status >= 500 ? 'unavailable' : 'failed',
          `Storage answered HTTP ${response.status} for ${shown}; nothing was installed.`,
        );
      }
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      return {
        body: response.body,
        bytes: Number.isFinite(declared) ? declared : null,
      };
    },
  };
}
