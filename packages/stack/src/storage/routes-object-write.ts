// Writing and removing objects (storage-api src/http/routes/object/createObject, updateObject,
// deleteObject, deleteObjects). Rows are written and deleted as the caller; a file is removed
// only after the deletion of its row is committed.
import type { Context } from 'hono';
import { z } from 'zod';
import { assertValidBucketName, assertValidKey } from './limits.ts';
import { uploadObject } from './object-upload.ts';
import { callerOf, objectPathOf, readJson, upsertRequested } from './request-input.ts';
import { findObject } from './rows.ts';
import { inTransaction } from './scoped-transaction.ts';
import { type StorageContext, scopeOf } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';

/** POST /object/:bucket/* (upsert per x-upsert) and PUT /object/:bucket/* (always upsert). */
export async function uploadRoute(
  c: Context,
  context: StorageContext,
  segments: string[],
  mode: 'create' | 'update',
): Promise<Response> {
  const caller = await callerOf(c, context);
  const path = objectPathOf(segments);
  const operation = mode === 'create' ? 'storage.object.upload' : 'storage.object.upload_update';
  const result = await uploadObject(
    context,
    scopeOf(c, caller, operation),
    {
      bucketId: path.bucketId,
      name: path.name,
      upsert: mode === 'update' || upsertRequested(c),
      owner: caller.subject,
    },
    c.req.raw,
  );
  return c.json({ Id: result.id, Key: result.key });
}

/** storage-api's bound on one bulk request (MAX_OBJECTS_PER_REQUEST). */
const MAX_OBJECTS_PER_REQUEST = 1000;

const removeSchema = z.object({
  prefixes: z.array(z.string()).min(1).max(MAX_OBJECTS_PER_REQUEST),
});

/** DELETE /object/:bucket with `{prefixes}` (storage-js `remove`): the rows the caller may delete. */
export async function removeObjects(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const { bucketId } = objectPathOf(segments);
  assertValidBucketName(bucketId);
  const { prefixes } = await readJson(c, removeSchema);
  const scope = scopeOf(c, caller, 'storage.object.delete_many');
  const rows = await inTransaction(context.pool, scope, async (tx) => {
    const result = await tx.query<{ version: string | null }>(
      `delete from storage.objects where bucket_id = $1 and name = any($2::text[])
       returning id, bucket_id, name, owner, owner_id, metadata, user_metadata, version,
                 created_at, updated_at, last_accessed_at`,
      [bucketId, prefixes],
    );
    return result.rows;
  });
  for (const row of rows) await context.files.remove(bucketId, row.version);
  return c.json(rows);
}

/** DELETE /object/:bucket/*: one object; a row the caller may not delete is `Access denied`. */
export async function deleteObject(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const path = objectPathOf(segments);
  assertValidBucketName(path.bucketId);
  assertValidKey(path.name);
  const scope = scopeOf(c, caller, 'storage.object.delete');
  const version = await inTransaction(context.pool, scope, async (tx) => {
    await tx.actAsService();
    const row = await findObject(tx, path.bucketId, path.name, { forUpdate: true });
    if (!row) throw storageErrors.noSuchKey();
    await tx.actAsCaller();
    const deleted = await tx.query(
      'delete from storage.objects where bucket_id = $1 and name = $2',
      [path.bucketId, path.name],
    );
    if ((deleted.rowCount ?? 0) === 0) throw storageErrors.accessDenied('Access denied');
    return row.version;
  });
  await context.files.remove(path.bucketId, version);
  return c.json({ message: 'Successfully deleted' });
}
