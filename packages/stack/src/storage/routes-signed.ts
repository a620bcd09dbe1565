// Signed URLs (storage-api src/http/routes/object/getSignedURL, getSignedURLs, getSignedObject,
// getSignedUploadURL, uploadSignedObject). Signing is as the caller: only an object the caller
// may read gets a download URL, and only a write the caller's policies admit an upload URL.
// Whoever holds the URL then needs no token: the signature is the right, until it expires.
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { z } from 'zod';
import { SERVICE_CALLER } from './caller.ts';
import { assertValidBucketName, assertValidKey } from './limits.ts';
import { serveObject } from './object-response.ts';
import { uploadObject } from './object-upload.ts';
import { callerOf, objectPathOf, readJson, upsertRequested } from './request-input.ts';
import { objectAsService } from './routes-object-read.ts';
import { findBucket, findObject, writeObjectRow } from './rows.ts';
import { inTransaction, probeInTransaction, serviceScope } from './scoped-transaction.ts';
import { signObjectToken, verifyObjectToken } from './signed-tokens.ts';
import { type StorageContext, scopeOf } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';
import { parseMetadataHeader } from './upload-source.ts';

const signSchema = z.object({ expiresIn: z.number().int().min(1) });
const signManySchema = z.object({
  expiresIn: z.number().int().min(1),
  paths: z.array(z.string()).min(1).max(1000),
});

/** POST /object/sign/:bucket/* (storage-js `createSignedUrl`). */
export async function signObjectUrl(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const path = objectPathOf(segments);
  assertValidBucketName(path.bucketId);
  assertValidKey(path.name);
  const { expiresIn } = await readJson(c, signSchema);
  const scope = scopeOf(c, caller, 'storage.object.sign');
  const row = await inTransaction(context.pool, scope, (tx) =>
    findObject(tx, path.bucketId, path.name),
  );
  if (!row) throw storageErrors.noSuchKey();
  const url = `${path.bucketId}/${path.name}`;
  const token = await signObjectToken(
    { url, scope: 'download' },
    context.config.jwtSecret,
    expiresIn,
  );
  return c.json({ signedURL: `/object/sign/${url}?token=${token}` });
}

/** POST /object/sign/:bucket with `{expiresIn, paths}` (storage-js `createSignedUrls`). */
export async function signObjectUrls(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const { bucketId } = objectPathOf(segments);
  assertValidBucketName(bucketId);
  const { expiresIn, paths } = await readJson(c, signManySchema);
  const scope = scopeOf(c, caller, 'storage.object.sign_many');
  const visible = await inTransaction(context.pool, scope, async (tx) => {
    const result = await tx.query<{ name: string }>(
      'select name from storage.objects where bucket_id = $1 and name = any($2::text[])',
      [bucketId, paths],
    );
    return new Set(result.rows.map((row) => row.name));
  });
  const signed = await Promise.all(
    paths.map(async (path) => {
      if (!visible.has(path)) {
        return {
          error: 'Either the object does not exist or you do not have access to it',
          path,
          signedURL: null,
        };
      }
      const url = `${bucketId}/${path}`;
      const token = await signObjectToken(
        { url, scope: 'download' },
        context.config.jwtSecret,
        expiresIn,
      );
      return { error: null, path, signedURL: `/object/sign/${url}?token=${token}` };
    }),
  );
  return c.json(signed);
}

function tokenOf(c: Context): string {
  const token = c.req.query('token');
  if (!token) throw storageErrors.invalidRequest("querystring must have required property 'token'");
  return token;
}

/** GET /object/sign/:bucket/*?token=… : the object, to whoever holds a valid download token. */
export async function downloadSignedObject(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const path = objectPathOf(segments);
  const claims = await verifyObjectToken(
    tokenOf(c),
    context.config.jwtSecret,
    `${path.bucketId}/${path.name}`,
    'download',
  );
  const row = await objectAsService(c, context, path, 'storage.object.get_signed');
  return serveObject(context.files, row, c.req.raw, {
    download: c.req.query('download'),
    expires: claims.exp ? new Date(claims.exp * 1000) : undefined,
    headOnly: c.req.method === 'HEAD',
  });
}

/**
 * POST /object/upload/sign/:bucket/* (storage-js `createSignedUploadUrl`): probes the caller's
 * write as an upload would, then signs `{owner, url, upsert}` for two hours.
 */
export async function signUploadUrl(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const caller = await callerOf(c, context);
  const path = objectPathOf(segments);
  assertValidBucketName(path.bucketId);
  assertValidKey(path.name);
  const upsert = upsertRequested(c);
  const scope = scopeOf(c, caller, 'storage.object.sign_upload_url');
  const bucket = await inTransaction(context.pool, serviceScope(scope), (tx) =>
    findBucket(tx, path.bucketId),
  );
  if (!bucket) throw storageErrors.noSuchBucket();
  const length = c.req.header('content-length');
  await probeInTransaction(context.pool, scope, async (tx) => {
    await writeObjectRow(
      tx,
      {
        bucketId: path.bucketId,
        name: path.name,
        owner: caller.subject,
        metadata: {
          mimetype: c.req.header('content-type'),
          contentLength: length === undefined ? undefined : Number(length),
        },
        userMetadata: parseMetadataHeader(c.req.header('x-metadata') ?? null),
        version: randomUUID(),
      },
      upsert,
    );
  });
  const url = `${path.bucketId}/${path.name}`;
  const token = await signObjectToken(
    { owner: caller.subject, url, upsert, scope: 'upload' },
    context.config.jwtSecret,
    context.config.signedUploadExpirySeconds,
  );
  return c.json({ url: `/object/upload/sign/${url}?token=${token}`, token });
}

/**
 * PUT /object/upload/sign/:bucket/*?token=… (storage-js `uploadToSignedUrl`): the upload the
 * token allows, written by the service as the token's owner (its policies were checked when
 * the URL was signed).
 */
export async function uploadToSignedUrl(
  c: Context,
  context: StorageContext,
  segments: string[],
): Promise<Response> {
  const path = objectPathOf(segments);
  const claims = await verifyObjectToken(
    tokenOf(c),
    context.config.jwtSecret,
    `${path.bucketId}/${path.name}`,
    'upload',
  );
  const scope = scopeOf(c, SERVICE_CALLER, 'storage.object.upload_signed');
  const result = await uploadObject(
    context,
    scope,
    {
      bucketId: path.bucketId,
      name: path.name,
      upsert: claims.upsert === true,
      owner: typeof claims.owner === 'string' ? claims.owner : undefined,
    },
    c.req.raw,
  );
  return c.json({ Key: result.key });
}
