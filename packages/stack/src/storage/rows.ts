// The SQL of storage.buckets and storage.objects the routes share. Each function runs inside a
// ScopedTransaction, as whichever role the transaction currently acts as.
import { randomUUID } from 'node:crypto';
import { isUuid } from './limits.ts';
import type { ScopedTransaction } from './scoped-transaction.ts';
import { fromDatabaseError, storageErrors } from './storage-error.ts';

export interface BucketRow {
  id: string;
  name: string;
  owner: string | null;
  public: boolean;
  file_size_limit: number | null;
  allowed_mime_types: string[] | null;
  created_at: Date;
  updated_at: Date;
  type?: string;
}

export interface ObjectRow {
  id: string;
  bucket_id: string;
  name: string;
  owner: string | null;
  owner_id: string | null;
  metadata: Record<string, unknown> | null;
  user_metadata: Record<string, unknown> | null;
  version: string | null;
  created_at: Date;
  updated_at: Date;
  last_accessed_at: Date;
}

/** The columns storage-api answers a bucket lookup with (GET /bucket/:id). */
export const BUCKET_COLUMNS =
  'id, name, owner, public, created_at, updated_at, file_size_limit, allowed_mime_types';

const OBJECT_COLUMNS =
  'id, bucket_id, name, owner, owner_id, metadata, user_metadata, version, created_at, ' +
  'updated_at, last_accessed_at';

export async function findBucket(
  tx: ScopedTransaction,
  bucketId: string,
  options: { forUpdate?: boolean } = {},
): Promise<BucketRow | undefined> {
  const result = await tx.query<BucketRow>(
    `select ${BUCKET_COLUMNS} from storage.buckets where id = $1${options.forUpdate ? ' for update' : ''}`,
    [bucketId],
  );
  return result.rows[0];
}

export async function findObject(
  tx: ScopedTransaction,
  bucketId: string,
  name: string,
  options: { forUpdate?: boolean } = {},
): Promise<ObjectRow | undefined> {
  const result = await tx.query<ObjectRow>(
    `select ${OBJECT_COLUMNS} from storage.objects where bucket_id = $1 and name = $2` +
      (options.forUpdate ? ' for update' : ''),
    [bucketId, name],
  );
  return result.rows[0];
}

export interface ObjectWrite {
  bucketId: string;
  name: string;
  /** The JWT `sub` of whoever writes: `owner_id`, and `owner` when it is a uuid. */
  owner: string | undefined;
  metadata: Record<string, unknown>;
  userMetadata: Record<string, unknown> | null | undefined;
  version: string;
}

/**
 * Inserts the object's row, or with `upsert` replaces the content columns of an existing one
 * (storage-api's createObject / upsertObject), as whoever the transaction acts as: a plain insert
 * needs only an INSERT policy (no RETURNING, whose rows SELECT policies would have to admit); an
 * upsert reads the row it conflicts with, so it needs INSERT, UPDATE and SELECT, as on hosted
 * Supabase. An existing row without upsert is 409 Duplicate. The row is read back by the service.
 */
export async function writeObjectRow(
  tx: ScopedTransaction,
  write: ObjectWrite,
  upsert: boolean,
): Promise<ObjectRow> {
  const conflict = upsert
    ? `on conflict (bucket_id, name) do update set metadata = excluded.metadata,
         user_metadata = excluded.user_metadata, version = excluded.version,
         owner = excluded.owner, owner_id = excluded.owner_id
       returning id`
    : '';
  try {
    await tx.query(
      `insert into storage.objects
         (id, bucket_id, name, owner, owner_id, metadata, user_metadata, version)
       values ($1, $2, $3, $4, $5, $6, $7, $8)
       ${conflict}`,
      [
        randomUUID(),
        write.bucketId,
        write.name,
        isUuid(write.owner) ? write.owner : null,
        write.owner ?? null,
        write.metadata,
        write.userMetadata ?? null,
        write.version,
      ],
    );
  } catch (error) {
    if ((error as { code?: unknown }).code === '23505') throw storageErrors.keyAlreadyExists(error);
    throw fromDatabaseError(error);
  }
  await tx.actAsService();
  const row = await findObject(tx, write.bucketId, write.name);
  await tx.actAsCaller();
  return row as ObjectRow;
}
