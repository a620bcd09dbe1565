// /bucket routes (storage-api src/http/routes/bucket/*): list, get, create, update, empty and
// delete, each as the caller, so RLS on storage.buckets (and storage.objects for emptying)
// decides; the service role bypasses it.
import { Hono } from 'hono';
import { z } from 'zod';
import {
  assertValidAllowedMimeTypes,
  assertValidBucketName,
  isUuid,
  parseBucketSizeLimit,
} from './limits.ts';
import { callerOf, readJson } from './request-input.ts';
import { BUCKET_COLUMNS, type BucketRow, findBucket } from './rows.ts';
import { inTransaction, type ScopedTransaction } from './scoped-transaction.ts';
import { type StorageContext, scopeOf } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';

const sizeLimitSchema = z
  .union([z.number().int().nonnegative(), z.string().regex(/^[0-9]+(?:\.[0-9]+)?[a-zA-Z]+$/)])
  .nullable()
  .optional();
const mimeTypesSchema = z.array(z.string()).nullable().optional();

const createSchema = z.object({
  name: z.string(),
  id: z.string().optional(),
  public: z.boolean().optional(),
  type: z.enum(['STANDARD', 'ANALYTICS']).optional(),
  file_size_limit: sizeLimitSchema,
  allowed_mime_types: mimeTypesSchema,
});

const updateSchema = z.object({
  public: z.boolean().optional(),
  file_size_limit: sizeLimitSchema,
  allowed_mime_types: mimeTypesSchema,
});

const listQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).optional(),
  offset: z.coerce.number().int().min(0).optional(),
  sortColumn: z.enum(['id', 'name', 'created_at', 'updated_at']).optional(),
  sortOrder: z.enum(['asc', 'desc']).optional(),
  search: z.string().optional(),
});

/** A size limit in bytes, refused above the global limit (storage-api parseMaxSizeLimit). */
function sizeLimitOf(
  value: number | string | null | undefined,
  globalLimit: number,
): number | null | undefined {
  if (value === null || value === undefined) return value;
  const bytes = typeof value === 'string' ? parseBucketSizeLimit(value) : value;
  if (bytes > globalLimit) throw storageErrors.entityTooLarge();
  return bytes;
}

/** Allowed MIME types with empty entries dropped, each checked. */
function mimeTypesOf(value: string[] | null | undefined): string[] | null | undefined {
  if (!value) return value;
  const types = value.filter((type) => type !== '');
  assertValidAllowedMimeTypes(types);
  return types;
}

/** A bucket as the API shows it: storage-api's response schema turns a null owner into "". */
function bucketJson(row: BucketRow): Record<string, unknown> {
  return { ...row, owner: row.owner ?? '' };
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

async function listBuckets(tx: ScopedTransaction, query: z.infer<typeof listQuerySchema>) {
  const values: unknown[] = [];
  let where = '';
  if (query.search) {
    values.push(`%${escapeLike(query.search)}%`);
    where = `where name ilike $${values.length}`;
  }
  // Without a sort column storage-api leaves the order to the database; by name is stable.
  const order = `order by ${query.sortColumn ?? 'name'} ${query.sortOrder ?? 'asc'}`;
  let page = '';
  if (query.limit !== undefined) {
    values.push(query.limit);
    page += ` limit $${values.length}`;
  }
  if (query.offset !== undefined) {
    values.push(query.offset);
    page += ` offset $${values.length}`;
  }
  const result = await tx.query<BucketRow>(
    `select ${BUCKET_COLUMNS}, type from storage.buckets ${where} ${order}${page}`,
    values,
  );
  return result.rows;
}

export function bucketRoutes(context: StorageContext): Hono {
  const app = new Hono();
  const { pool } = context;

  app.get('/bucket', async (c) => {
    const parsed = listQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw storageErrors.invalidRequest('querystring is invalid');
    const scope = scopeOf(c, await callerOf(c, context), 'storage.bucket.list');
    const rows = await inTransaction(pool, scope, (tx) => listBuckets(tx, parsed.data));
    return c.json(rows.map(bucketJson));
  });

  app.get('/bucket/:bucketId', async (c) => {
    const scope = scopeOf(c, await callerOf(c, context), 'storage.bucket.get');
    const row = await inTransaction(pool, scope, (tx) => findBucket(tx, c.req.param('bucketId')));
    if (!row) throw storageErrors.noSuchBucket();
    return c.json(bucketJson(row));
  });

  app.post('/bucket', async (c) => {
    const caller = await callerOf(c, context);
    const body = await readJson(c, createSchema);
    if (body.type === 'ANALYTICS') throw storageErrors.featureNotEnabled('iceberg_catalog');
    const id = body.id || body.name;
    assertValidBucketName(body.name);
    assertValidBucketName(id);
    const fileSizeLimit = sizeLimitOf(body.file_size_limit, context.config.fileSizeLimit);
    const allowedMimeTypes = mimeTypesOf(body.allowed_mime_types);
    const scope = scopeOf(c, caller, 'storage.bucket.create');
    await inTransaction(pool, scope, (tx) =>
      tx
        .query(
          `insert into storage.buckets
             (id, name, owner, owner_id, public, file_size_limit, allowed_mime_types, type)
           values ($1, $2, $3, $4, $5, $6, $7, 'STANDARD')`,
          [
            id,
            body.name,
            isUuid(caller.subject) ? caller.subject : null,
            caller.subject ?? null,
            body.public ?? false,
            fileSizeLimit ?? null,
            allowedMimeTypes ?? null,
          ],
        )
        .catch((error: unknown) => {
          if ((error as { code?: unknown }).code === '23505') {
            throw storageErrors.bucketAlreadyExists(error);
          }
          throw error;
        }),
    );
    return c.json({ name: body.name });
  });

  app.put('/bucket/:bucketId', async (c) => {
    const caller = await callerOf(c, context);
    const bucketId = c.req.param('bucketId');
    assertValidBucketName(bucketId);
    const body = await readJson(c, updateSchema);
    const changes: Array<[string, unknown]> = [];
    if (body.public !== undefined) changes.push(['public', body.public]);
    const fileSizeLimit = sizeLimitOf(body.file_size_limit, context.config.fileSizeLimit);
    if (fileSizeLimit !== undefined) changes.push(['file_size_limit', fileSizeLimit]);
    const allowedMimeTypes = mimeTypesOf(body.allowed_mime_types);
    if (allowedMimeTypes !== undefined) changes.push(['allowed_mime_types', allowedMimeTypes]);
    if (changes.length === 0) throw storageErrors.noContent();
    const assignments = changes.map(([column], index) => `${column} = $${index + 2}`).join(', ');
    const scope = scopeOf(c, caller, 'storage.bucket.update');
    const updated = await inTransaction(pool, scope, async (tx) => {
      const result = await tx.query(
        `update storage.buckets set ${assignments}, updated_at = now() where id = $1`,
        [bucketId, ...changes.map(([, value]) => value)],
      );
      return result.rowCount ?? 0;
    });
    if (updated === 0) throw storageErrors.noSuchBucket();
    return c.json({ message: 'Successfully updated' });
  });

  // storage-api queues the removal and deletes as its admin; here it is done before answering,
  // and as the caller, so a caller's DELETE policy on storage.objects bounds what goes.
  app.post('/bucket/:bucketId/empty', async (c) => {
    const scope = scopeOf(c, await callerOf(c, context), 'storage.bucket.empty');
    const bucketId = c.req.param('bucketId');
    const removed = await inTransaction(pool, scope, async (tx) => {
      if (!(await findBucket(tx, bucketId))) throw storageErrors.noSuchBucket();
      const result = await tx.query<{ version: string | null }>(
        'delete from storage.objects where bucket_id = $1 returning version',
        [bucketId],
      );
      return result.rows;
    });
    for (const { version } of removed) await context.files.remove(bucketId, version);
    return c.json({
      message: 'Empty bucket has been queued. Completion may take up to an hour.',
    });
  });

  app.delete('/bucket/:bucketId', async (c) => {
    const scope = scopeOf(c, await callerOf(c, context), 'storage.bucket.delete');
    const bucketId = c.req.param('bucketId');
    await inTransaction(pool, scope, async (tx) => {
      await tx.actAsService();
      if (!(await findBucket(tx, bucketId, { forUpdate: true }))) {
        throw storageErrors.noSuchBucket();
      }
      const objects = await tx.query('select 1 from storage.objects where bucket_id = $1 limit 1', [
        bucketId,
      ]);
      if ((objects.rowCount ?? 0) > 0) throw storageErrors.bucketNotEmpty();
      await tx.actAsCaller();
      const deleted = await tx.query('delete from storage.buckets where id = $1', [bucketId]);
      if ((deleted.rowCount ?? 0) === 0) throw storageErrors.noSuchBucket();
    });
    await context.files.removeBucketDir(bucketId);
    return c.json({ message: 'Successfully deleted' });
  });

  return app;
}
