// An upload to Supabase Storage as the caller: POST `/object/<bucket>/<path>` with their own token
// and the anon key, so RLS on storage.objects decides (docs/farm.md "Browser", save_to). Never
// with a service key. Used by browser_cdp to keep a screenshot in the caller's `exports` folder.
import type { CallerStorage } from '../mcp/tool-definition.ts';
import { ToolError } from '../mcp/tool-error.ts';

/** A relative object path with no empty, `.` or `..` segment: the path named is the path written. */
export const RELATIVE_OBJECT_PATH = /^(?!\.{1,2}(?:\/|$))[^/]+(?:\/(?!\.{1,2}(?:\/|$))[^/]+)*$/;

/** Where an upload went. */
export interface SavedObject {
  bucket: string;
  path: string;
}

/** The upload URL: each path segment encoded, so the path checked is the path written. */
function uploadUrl(storage: CallerStorage, bucket: string, path: string): string {
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  return `${storage.url}/object/${encodeURIComponent(bucket)}/${encoded}`;
}

/**
 * Writes `bytes` to `bucket/<caller's uid>/<path>` as the caller, replacing what is there
 * (x-upsert). Throws a ToolError: permission_denied when the bucket's policies refuse it,
 * unavailable when Storage cannot be reached or fails, failed for any other refusal (a missing
 * bucket, the size or MIME rules).
 */
export async function uploadAsCaller(
  storage: CallerStorage,
  object: { bucket: string; userId: string; path: string; contentType: string },
  bytes: Uint8Array,
): Promise<SavedObject> {
  if (!RELATIVE_OBJECT_PATH.test(object.path)) {
    throw new ToolError('invalid_arguments', 'path: no empty, . or .. segments');
  }
  const path = `${object.userId}/${object.path}`;
  const shown = `${object.bucket}/${path}`;
  let response: Response;
  try {
    response = await fetch(uploadUrl(storage, object.bucket, path), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${storage.accessToken}`,
        apikey: storage.apikey,
        'content-type': object.contentType,
        'x-upsert': 'true',
      },
      body: bytes,
      redirect: 'error',
    });
  } catch (error) {
    throw new ToolError('unavailable', `Storage could not be reached to save ${shown}.`, {
      cause: error,
    });
  }
  if (response.ok) {
    await response.body?.cancel();
    return { bucket: object.bucket, path };
  }
  // Storage's error body is {statusCode, error, message}: an RLS refusal is HTTP 400 with
  // statusCode "403", and the message names the rule (row-level security, size, MIME type).
  const body = (await response.json().catch(() => ({}))) as {
    statusCode?: unknown;
    message?: unknown;
  };
  const said = typeof body.message === 'string' ? `: ${body.message.slice(0, 300)}` : '';
  if (response.status >= 500) {
    throw new ToolError(
      'unavailable',
      `Storage answered HTTP ${response.status} for ${shown}${said}`,
    );
  }
  const denied = response.status === 403 || String(body.statusCode) === '403';
  throw new ToolError(
    denied ? 'permission_denied' : 'failed',
    `Storage refused to save ${shown} (HTTP ${response.status})${said}`,
  );
}
