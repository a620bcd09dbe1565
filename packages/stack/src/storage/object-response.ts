// Answers that serve an object: its content (with the headers storage-api's asset renderer sets:
// type, length, ETag, Last-Modified, Cache-Control, Accept-Ranges, X-Robots-Tag, a download's
// Content-Disposition; RFC 9110 §13.1.2 If-None-Match and §14 single byte ranges), only its
// headers (HEAD), or its info as JSON (storage-api src/storage/renderer/info.ts).
import { Readable } from 'node:stream';
import type { ObjectFiles } from './object-files.ts';
import type { ObjectRow } from './rows.ts';
import { renderStorageError, storageErrors } from './storage-error.ts';

export interface ServeOptions {
  /** `?download` ('' for a bare `download`, else the file name to suggest). */
  download: string | undefined;
  /** A signed URL's expiry, sent as `Expires` instead of the object's Cache-Control. */
  expires?: Date;
  headOnly: boolean;
}

function text(metadata: Record<string, unknown> | null, key: string): string | undefined {
  const value = metadata?.[key];
  return typeof value === 'string' ? value : undefined;
}

/** The renderer's answer when a row exists but its content does not (storage-api renderer.ts). */
function contentMissing(): Response {
  const body = {
    statusCode: '404',
    error: 'Not found',
    message: 'The resource was not found',
    code: 'NoSuchKey',
  };
  return new Response(JSON.stringify(body), {
    status: 400,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
  });
}

/**
 * One `bytes=` range (RFC 9110 §14.1.2): undefined to send the whole content (no range, or a
 * form this server does not take, such as several ranges), null when it cannot be satisfied.
 */
function byteRange(
  header: string | null,
  size: number,
): { start: number; end: number } | null | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    return suffix === 0 || size === 0 ? null : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  return start >= size || start > end ? null : { start, end };
}

function contentDisposition(download: string): string {
  if (download === '') return 'attachment;';
  const encoded = encodeURIComponent(download);
  return `attachment; filename=${encoded}; filename*=UTF-8''${encoded}`;
}

export async function serveObject(
  files: ObjectFiles,
  row: Pick<ObjectRow, 'bucket_id' | 'version' | 'metadata'>,
  request: Request,
  options: ServeOptions,
): Promise<Response> {
  const file = await files.statVersion(row.bucket_id, row.version);
  if (!file) return contentMissing();
  const eTag = text(row.metadata, 'eTag');
  const headers = new Headers({
    'accept-ranges': 'bytes',
    'content-type': text(row.metadata, 'mimetype') ?? 'application/octet-stream',
    'last-modified': file.modified.toUTCString(),
    'x-robots-tag': 'none',
  });
  if (eTag) headers.set('etag', eTag);
  if (options.expires) headers.set('expires', options.expires.toUTCString());
  else headers.set('cache-control', text(row.metadata, 'cacheControl') ?? 'no-cache');
  if (options.download !== undefined) {
    headers.set('content-disposition', contentDisposition(options.download));
  }
  if (eTag && request.headers.get('if-none-match') === eTag) {
    return new Response(null, { status: 304, headers });
  }
  const range = byteRange(request.headers.get('range'), file.size);
  if (range === null) {
    // RFC 9110 §15.5.17: a 416 names the current length.
    const refusal = renderStorageError(storageErrors.invalidRange());
    refusal.headers.set('content-range', `bytes */${file.size}`);
    return refusal;
  }
  const length = range ? range.end - range.start + 1 : file.size;
  headers.set('content-length', String(length));
  if (range) headers.set('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
  const status = range ? 206 : 200;
  if (options.headOnly) return new Response(null, { status, headers });
  const stream = Readable.toWeb(files.read(file.path, range)) as ReadableStream<Uint8Array>;
  return new Response(stream, { status, headers });
}

/** GET /object/info/…: the object as storage-js `info()` reads it (it camel-cases the keys). */
export function objectInfo(row: ObjectRow): Record<string, unknown> {
  const metadata = row.metadata ?? {};
  return {
    id: row.id,
    name: row.name,
    version: row.version,
    bucket_id: row.bucket_id,
    size: metadata.size ?? null,
    content_type: metadata.mimetype ?? null,
    cache_control: metadata.cacheControl ?? null,
    etag: metadata.eTag ?? null,
    metadata: row.user_metadata,
    last_modified: row.updated_at,
    created_at: row.created_at,
  };
}
