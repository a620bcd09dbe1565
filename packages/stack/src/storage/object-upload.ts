// Uploads (POST/PUT /object/:bucket/*, and PUT to a signed upload URL): the bucket's limits, the
// caller's policies probed before any byte is stored (storage-api's canUpload), the content
// streamed to a temp file, then the row written as the caller. Nothing is left behind either way:
// the file gets its final name (a new version) before the row, and is removed again if the row
// is refused; a replaced version's file is removed once the new row is committed.
import { randomUUID } from 'node:crypto';
import {
  assertMimeTypeAllowed,
  assertValidBucketName,
  assertValidKey,
  isEmptyFolderPlaceholder,
} from './limits.ts';
import { findBucket, findObject, writeObjectRow } from './rows.ts';
import {
  inTransaction,
  probeInTransaction,
  type RequestScope,
  serviceScope,
} from './scoped-transaction.ts';
import type { StorageContext } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';
import { openUploadSource } from './upload-source.ts';

export interface UploadTarget {
  bucketId: string;
  name: string;
  upsert: boolean;
  /** Who the object belongs to: the caller's `sub`, or a signed upload URL's `owner`. */
  owner: string | undefined;
}

export async function uploadObject(
  context: StorageContext,
  scope: RequestScope,
  target: UploadTarget,
  request: Request,
): Promise<{ id: string; key: string }> {
  const { pool, files, config } = context;
  const { bucketId, name, upsert, owner } = target;
  assertValidBucketName(bucketId);
  assertValidKey(name);
  const bucket = await inTransaction(pool, serviceScope(scope), (tx) => findBucket(tx, bucketId));
  if (!bucket) throw storageErrors.noSuchBucket();
  const placeholder = isEmptyFolderPlaceholder(name);
  const maxBytes = placeholder
    ? 0
    : Math.min(config.fileSizeLimit, bucket.file_size_limit ?? Number.POSITIVE_INFINITY);
  const source = await openUploadSource(request, maxBytes);
  if (!placeholder) assertMimeTypeAllowed(source.mimetype, bucket.allowed_mime_types);

  const rowOf = (version: string, metadata: Record<string, unknown>) => ({
    bucketId,
    name,
    owner,
    metadata,
    userMetadata: source.userMetadata,
    version,
  });
  await probeInTransaction(pool, scope, async (tx) => {
    await writeObjectRow(
      tx,
      rowOf(randomUUID(), { mimetype: source.mimetype, contentLength: source.declaredLength }),
      upsert,
    );
  });

  const written = await files.writeTemp(source.content, maxBytes);
  const version = randomUUID();
  try {
    await files.place(written.tempPath, bucketId, version);
  } catch (error) {
    await files.discardTemp(written.tempPath);
    throw error;
  }
  const metadata = {
    eTag: written.eTag,
    size: written.size,
    mimetype: source.mimetype,
    cacheControl: source.cacheControl,
    lastModified: new Date().toISOString(),
    contentLength: written.size,
    httpStatusCode: 200,
  };
  let outcome: { id: string; replaced: string | null };
  try {
    outcome = await inTransaction(pool, scope, async (tx) => {
      await tx.actAsService();
      await tx.lockKey(bucketId, name);
      const previous = await findObject(tx, bucketId, name, { forUpdate: true });
      await tx.actAsCaller();
      const row = await writeObjectRow(tx, rowOf(version, metadata), upsert);
      return { id: row.id, replaced: previous?.version ?? null };
    });
  } catch (error) {
    await files.remove(bucketId, version);
    throw error;
  }
  if (outcome.replaced !== version) {
    await files.remove(bucketId, outcome.replaced).catch((error: unknown) => {
      context.logger.warn({ err: error, bucketId }, 'could not remove a replaced version');
    });
  }
  return { id: outcome.id, key: `${bucketId}/${name}` };
}
