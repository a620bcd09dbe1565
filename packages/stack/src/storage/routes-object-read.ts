// Reading objects (storage-api src/http/routes/object/getObject, getPublicObject, getObjectInfo,
// listObjects): a public bucket's objects are served to anyone; a private bucket's only as the
// caller's policies allow (RLS on storage.objects), and not at all without a valid token.
import type { Context } from 'hono';
import { z } from 'zod';
import { SERVICE_CALLER } from './caller.ts';
import { assertValidBucketName, assertValidKey } from './limits.ts';
import { objectInfo, serveObject } from './object-response.ts';
import { callerOf, type ObjectPath, objectPathOf, readJson } from './request-input.ts';
import { findBucket, findObject, type ObjectRow } from './rows.ts';
import { inTransaction } from './scoped-transaction.ts';
import { type StorageContext, scopeOf } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';

export type ReadAccess =
  /** Any caller; a missing or invalid token reads as anon (GET /object/:bucket/*). */
  | 'anyone'
  /** A valid token is required (GET /object/authenticated/:bucket/*). */
  | 'authenticated'
  /** Public buckets only, read by the service (GET /object/public/:bucket/*). */
  | 'public';

/**
 * The object's row, looked up as storage-api looks it up: the bucket by the service; in a public
 * bucket (or on a public route) the object too, otherwise as the caller, under RLS.
 */
export async function readableObject(
  c: Context,
  context: StorageContext,
  path: ObjectPath,
  access: ReadAccess,
  operation: string,
): Promise<ObjectRow> {
  assertValidBucketName(path.bucketId);
  assertValidKey(path.name);
  const caller = await callerOf(c, context, access !== 'authenticated');
  const scope = scopeOf(c, caller, operation);
  const row = await inTransaction(context.pool, scope, async (tx) => {
    await tx.actAsService();
    const bucket = await findBucket(tx, path.bucketId);
    if (!bucket) throw storageErrors.noSuchBucket();
    if (access === 'public' || !caller.authenticated) {
      if (!bucket.public) throw storageErrors.noSuchBucket();
    }
    if (!bucket.public) await tx.actAsCaller();
    return findObject(tx, path.bucketId, path.name);
  });
  if (!row) throw storageErrors.noSuchKey();
  return row;
}

export async function downloadObject(
  c: Context,
  context: StorageContext,
  segments: string[],
  access: ReadAccess,
): Promise<Response> {
  const operation =
    access === 'public' ? 'storage.object.get_public' : 'storage.object.get_authenticated';
  const row = await readableObject(c, context, objectPathOf(segments), access, operation);
  return serveObject(context.files, row, c.req.raw, {
    download: c.req.query('download'),
    headOnly: c.req.method === 'HEAD',
  });
}

export async function objectInfoRoute(
  c: Context,
  context: StorageContext,
  segments: string[],
  access: ReadAccess,
): Promise<Response> {
  const operation =
    access === 'public' ? 'storage.object.info_public' : 'object.get_authenticated_info';
  const row = await readableObject(c, context, objectPathOf(segments), access, operation);
  return c.json(objectInfo(row));
}

const listSchema = z.object({
  prefix: z.string(),
  limit: z.number().int().min(1).optional(),
  offset: z.number().int().min(0).optional(),
  search: z.string().optional(),
  sortBy: z
    .object({
      column: z.enum(['name', 'updated_at', 'created_at', 'last_accessed_at']),
      order: z.enum(['asc', 'desc']).optional(),
    })
    .optional(),
});

/** POST /object/list/:bucket, storage-js `list(prefix, {limit, offset, sortBy, search})`. */
export async function listObjects(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const { bucketId } = objectPathOf(segments);
  const body = await readJson(c, listSchema);
  // The prefix names a folder (storage-api ObjectStorage.searchObjects).
  const prefix = body.prefix !== '' && !body.prefix.endsWith('/') ? `${body.prefix}/` : body.prefix;
  const search = body.search ?? '';
  const scope = scopeOf(c, caller, 'storage.object.list');
  const rows = await inTransaction(context.pool, scope, async (tx) => {
    const result = await tx.query('select * from storage.search($1, $2, $3, $4, $5, $6, $7, $8)', [
      prefix,
      bucketId,
      body.limit ?? 100,
      (prefix + search).split('/').length,
      body.offset ?? 0,
      search,
      body.sortBy?.column ?? 'name',
      body.sortBy?.order ?? 'asc',
    ]);
    return result.rows;
  });
  return c.json(rows);
}

/** An object looked up by the service itself (a signed URL's object: the token is the right). */
export async function objectAsService(
  c: Context,
  context: StorageContext,
  path: ObjectPath,
  operation: string,
): Promise<ObjectRow> {
  const scope = scopeOf(c, SERVICE_CALLER, operation);
  const row = await inTransaction(context.pool, scope, (tx) =>
    findObject(tx, path.bucketId, path.name),
  );
  if (!row) throw storageErrors.noSuchKey();
  return row;
}
