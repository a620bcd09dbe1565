// Moving and copying objects (storage-api src/http/routes/object/moveObject, copyObject). A move
// updates the row as the caller (RLS: SELECT and UPDATE on the source, UPDATE's check on the new
// name); a copy reads the source and inserts (or upserts) the destination as the caller. Content
// is never rewritten: the destination gets a second name for the same file (files never change),
// made before the row and removed again if the row is refused.
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { z } from 'zod';
import { assertValidBucketName, assertValidKey, isUuid } from './limits.ts';
import { callerOf, readJson, upsertRequested } from './request-input.ts';
import { findBucket, findObject, writeObjectRow } from './rows.ts';
import { inTransaction, type ScopedTransaction } from './scoped-transaction.ts';
import { type StorageContext, scopeOf } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';
import { parseMetadataHeader } from './upload-source.ts';

const relocationSchema = z.object({
  bucketId: z.string(),
  sourceKey: z.string(),
  destinationKey: z.string(),
  destinationBucket: z.string().nullish(),
  copyMetadata: z.boolean().optional(),
  metadata: z
    .object({ cacheControl: z.string().optional(), mimetype: z.string().optional() })
    .optional(),
});

type Relocation = z.infer<typeof relocationSchema>;

function targetsOf(body: Relocation) {
  const destinationBucket = body.destinationBucket || body.bucketId;
  assertValidBucketName(body.bucketId);
  assertValidBucketName(destinationBucket);
  assertValidKey(body.sourceKey);
  assertValidKey(body.destinationKey);
  return { destinationBucket };
}

/** Locks both keys in one order, so two opposite moves cannot deadlock. */
async function lockKeys(tx: ScopedTransaction, keys: Array<[string, string]>): Promise<void> {
  const sorted = [...keys].sort((a, b) => `${a[0]}/${a[1]}`.localeCompare(`${b[0]}/${b[1]}`));
  for (const [bucketId, name] of sorted) await tx.lockKey(bucketId, name);
}

/** POST /object/move (storage-js `move`). */
export async function moveObject(c: Context, context: StorageContext): Promise<Response> {
  const caller = await callerOf(c, context);
  const body = await readJson(c, relocationSchema);
  const { destinationBucket } = targetsOf(body);
  const { files, pool } = context;
  const crossBucket = destinationBucket !== body.bucketId;
  const newVersion = randomUUID();
  let linked = false;
  const scope = scopeOf(c, caller, 'storage.object.move');
  try {
    const moved = await inTransaction(pool, scope, async (tx) => {
      await tx.actAsService();
      await lockKeys(tx, [
        [body.bucketId, body.sourceKey],
        [destinationBucket, body.destinationKey],
      ]);
      if (!(await findBucket(tx, destinationBucket))) throw storageErrors.noSuchBucket();
      const source = await findObject(tx, body.bucketId, body.sourceKey, { forUpdate: true });
      if (!source) throw storageErrors.noSuchKey();
      await tx.actAsCaller();
      if (!(await findObject(tx, body.bucketId, body.sourceKey))) throw storageErrors.noSuchKey();
      if (!crossBucket && body.sourceKey === body.destinationKey) {
        return { id: source.id, oldVersion: null };
      }
      // Within a bucket the file keeps its name; into another bucket it gets a second one.
      let version = source.version;
      if (crossBucket && source.version) {
        await files.duplicate(
          { bucketId: body.bucketId, version: source.version },
          { bucketId: destinationBucket, version: newVersion },
        );
        linked = true;
        version = newVersion;
      }
      const result = await tx
        .query<{ id: string }>(
          `update storage.objects
             set bucket_id = $3, name = $4, version = $5, owner = $6, owner_id = $7
           where bucket_id = $1 and name = $2
           returning id`,
          [
            body.bucketId,
            body.sourceKey,
            destinationBucket,
            body.destinationKey,
            version,
            isUuid(caller.subject) ? caller.subject : null,
            caller.subject ?? null,
          ],
        )
        .catch((error: unknown) => {
          if ((error as { code?: unknown }).code === '23505') {
            throw storageErrors.resourceAlreadyExists(error);
          }
          throw error;
        });
      if (!result.rows[0]) throw storageErrors.noSuchKey();
      return { id: result.rows[0].id, oldVersion: crossBucket ? source.version : null };
    });
    if (moved.oldVersion) await files.remove(body.bucketId, moved.oldVersion);
    return c.json({ message: 'Successfully moved', Id: moved.id, Key: body.destinationKey });
  } catch (error) {
    if (linked) await files.remove(destinationBucket, newVersion);
    throw error;
  }
}

/** POST /object/copy (storage-js `copy`); `x-upsert: true` replaces an existing destination. */
export async function copyObject(c: Context, context: StorageContext): Promise<Response> {
  const caller = await callerOf(c, context);
  const body = await readJson(c, relocationSchema);
  const { destinationBucket } = targetsOf(body);
  const { files, pool } = context;
  const upsert = upsertRequested(c);
  const newVersion = randomUUID();
  let linked = false;
  const scope = scopeOf(c, caller, 'storage.object.copy');
  try {
    const copied = await inTransaction(pool, scope, async (tx) => {
      const source = await findObject(tx, body.bucketId, body.sourceKey);
      if (!source?.version) throw storageErrors.noSuchKey();
      await tx.actAsService();
      if (!(await findBucket(tx, destinationBucket))) throw storageErrors.noSuchBucket();
      await tx.lockKey(destinationBucket, body.destinationKey);
      const previous = await findObject(tx, destinationBucket, body.destinationKey, {
        forUpdate: true,
      });
      await files.duplicate(
        { bucketId: body.bucketId, version: source.version },
        { bucketId: destinationBucket, version: newVersion },
      );
      linked = true;
      // copyMetadata (the default) keeps everything; otherwise the given file metadata and
      // x-metadata replace the source's (storage-api ObjectStorage.copyObject).
      const copyMetadata = body.copyMetadata ?? true;
      const metadata = { ...(source.metadata ?? {}) };
      if (!copyMetadata) {
        if (body.metadata?.cacheControl !== undefined) {
          metadata.cacheControl = body.metadata.cacheControl;
        }
        if (body.metadata?.mimetype !== undefined) metadata.mimetype = body.metadata.mimetype;
      }
      metadata.lastModified = new Date().toISOString();
      await tx.actAsCaller();
      const row = await writeObjectRow(
        tx,
        {
          bucketId: destinationBucket,
          name: body.destinationKey,
          owner: caller.subject,
          metadata,
          userMetadata: copyMetadata
            ? source.user_metadata
            : parseMetadataHeader(c.req.header('x-metadata') ?? null),
          version: newVersion,
        },
        upsert,
      );
      return { row, replaced: previous?.version ?? null };
    });
    if (copied.replaced) await files.remove(destinationBucket, copied.replaced);
    return c.json({
      Id: copied.row.id,
      Key: `${destinationBucket}/${body.destinationKey}`,
      ...copied.row,
    });
  } catch (error) {
    if (linked) await files.remove(destinationBucket, newVersion);
    throw error;
  }
}
