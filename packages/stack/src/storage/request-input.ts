// Request plumbing shared by the storage routes: the caller, JSON bodies checked against a
// schema, query values, and the bucket and object name a path names.
import type { Context } from 'hono';
import type { z } from 'zod';
import { type Caller, resolveCaller } from './caller.ts';
import type { StorageContext } from './storage-context.ts';
import { storageErrors } from './storage-error.ts';

/** The caller; a missing or invalid token is refused unless the route serves anonymous readers. */
export function callerOf(
  c: Context,
  context: StorageContext,
  allowAnonymous = false,
): Promise<Caller> {
  return resolveCaller(c.req.header('authorization'), context.config.jwtSecret, {
    allowAnonymous,
  });
}

/** Bodies of JSON routes are small; this bounds what is read before parsing. */
const JSON_BODY_BYTES = 1024 * 1024;

/** The JSON body against `schema`; an empty body counts as `{}` (storage-js sends `{}` too). */
export async function readJson<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  if (Number(c.req.header('content-length') ?? 0) > JSON_BODY_BYTES) {
    throw storageErrors.invalidRequest('Request body is too large');
  }
  const text = await c.req.text();
  let raw: unknown = {};
  if (text.trim() !== '') {
    try {
      raw = JSON.parse(text);
    } catch {
      throw storageErrors.invalidRequest('Body is not valid JSON');
    }
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue?.path.length ? `body/${issue.path.join('/')}` : 'body';
    throw storageErrors.invalidRequest(`${where} ${issue?.message ?? 'is invalid'}`);
  }
  return result.data;
}

export interface ObjectPath {
  bucketId: string;
  name: string;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw storageErrors.invalidRequest('Malformed path');
  }
}

/** `<bucket>/<name…>` from path segments: the first is the bucket, the rest the object name. */
export function objectPathOf(segments: string[]): ObjectPath {
  const [bucket = '', ...rest] = segments;
  return { bucketId: decode(bucket), name: rest.map(decode).join('/') };
}

/** Whether the `x-upsert` header asks for an upsert (storage-js sends 'true' or 'false'). */
export function upsertRequested(c: Context): boolean {
  return c.req.header('x-upsert') === 'true';
}
