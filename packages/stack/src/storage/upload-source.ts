// What an upload request carries, read as storage-api reads it (src/storage/uploader.ts
// fileUploadFromRequest): a multipart form (fields cacheControl, contentType, metadata, then the
// file) or a raw body with Content-Type, Cache-Control and base64 JSON `x-metadata` headers.
// The content itself stays a stream; a declared length over the limit is refused before reading.
import { multipartBoundary, readMultipartHead } from './multipart.ts';
import { storageErrors } from './storage-error.ts';

export interface UploadSource {
  mimetype: string;
  cacheControl: string;
  userMetadata: Record<string, unknown> | undefined;
  /** The Content-Length of a raw body (what a policy sees as metadata.contentLength at first). */
  declaredLength: number | undefined;
  content: AsyncIterable<Uint8Array>;
}

/** storage-api's bound on user metadata (MAX_CUSTOM_METADATA_SIZE). */
const USER_METADATA_BYTES = 1024 * 1024;

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The `x-metadata` header: base64 of a JSON object; anything else is ignored, as upstream. */
export function parseMetadataHeader(value: string | null): Record<string, unknown> | undefined {
  if (!value) return undefined;
  return parseJsonObject(Buffer.from(value, 'base64').toString('utf8'));
}

export async function openUploadSource(request: Request, maxBytes: number): Promise<UploadSource> {
  const contentType = request.headers.get('content-type') ?? undefined;
  if (!request.body) throw storageErrors.noContent();
  const boundary = multipartBoundary(contentType);
  if (boundary) {
    const head = await readMultipartHead(request.body, boundary, {
      fieldBytes: USER_METADATA_BYTES,
      fields: 10,
      fieldTooLong: storageErrors.userMetadataTooLarge,
    });
    if (!head.file) throw storageErrors.noContent();
    const cacheTime = head.fields.get('cacheControl');
    const metadata = head.fields.get('metadata') ?? head.fields.get('userMetadata');
    return {
      mimetype: head.fields.get('contentType') || head.file.contentType,
      cacheControl: cacheTime ? `max-age=${cacheTime}` : 'no-cache',
      userMetadata: metadata === undefined ? undefined : parseJsonObject(metadata),
      declaredLength: undefined,
      content: head.file.content,
    };
  }
  const lengthHeader = request.headers.get('content-length');
  const declaredLength = lengthHeader === null ? undefined : Number(lengthHeader);
  if (declaredLength !== undefined && declaredLength > maxBytes) {
    throw storageErrors.entityTooLarge();
  }
  return {
    mimetype: contentType || 'application/octet-stream',
    cacheControl: request.headers.get('cache-control') ?? 'no-cache',
    userMetadata: parseMetadataHeader(request.headers.get('x-metadata')),
    declaredLength: Number.isFinite(declaredLength) ? declaredLength : undefined,
    content: request.body,
  };
}
