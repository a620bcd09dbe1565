// Request plumbing shared by the auth routes: JSON bodies, bearer tokens and the signed-in user.
import type { Context } from 'hono';
import { z } from 'zod';
import type { AuthContext } from './auth-context.ts';
import { AuthError, authErrors } from './auth-error.ts';
import { type AccessTokenClaims, verifyProjectJwt } from './crypto.ts';
import { findSession } from './sessions.ts';
import { findUserById, type UserRow } from './users.ts';

/** Parses the JSON body against a schema; unparsable JSON is `bad_json`, a bad shape 400. */
export async function readBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let raw: unknown = {};
  const text = await c.req.text();
  if (text.trim() !== '') {
    try {
      raw = JSON.parse(text);
    } catch {
      throw authErrors.badJson();
    }
  }
  // Go decodes a JSON null into the zero value, and supabase-js sends nulls for unset fields
  // (code_challenge, data): a top-level null counts as absent.
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    raw = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== null));
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw authErrors.validation(`${issue?.path.join('.') || 'body'}: ${issue?.message}`);
  }
  return result.data;
}

export async function readBearerClaims(
  c: Context,
  context: AuthContext,
): Promise<AccessTokenClaims> {
  const header = c.req.header('Authorization') ?? '';
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw authErrors.noAuthorization();
  try {
    return await verifyProjectJwt(match[1], context.config.jwtSecret);
  } catch (error) {
    throw authErrors.badJwt(error instanceof Error ? error.message : 'invalid token');
  }
}

export interface SignedInUser {
  user: UserRow;
  claims: AccessTokenClaims;
  sessionId: string;
}

/** The user behind a user access token whose session still exists (GoTrue requireAuthentication). */
export async function requireSignedInUser(c: Context, context: AuthContext): Promise<SignedInUser> {
  const claims = await readBearerClaims(c, context);
  const user = claims.sub
    ? await findUserById(context.pool, claims.sub).catch(() => undefined)
    : undefined;
  if (!user || user.deleted_at) {
    throw new AuthError(403, 'user_not_found', 'User from sub claim in JWT does not exist');
  }
  const sessionId = claims.session_id ?? '';
  if (!sessionId || !(await findSession(context.pool, sessionId)))
    throw authErrors.sessionNotFound();
  return { user, claims, sessionId };
}

/** Admin routes need a token whose role is an admin role (service_role locally). */
export async function requireAdmin(c: Context, context: AuthContext): Promise<void> {
  const claims = await readBearerClaims(c, context);
  if (!context.config.adminRoles.includes(claims.role)) throw authErrors.notAdmin();
}

export const emailSchema = z
  .string()
  .trim()
  .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'Unable to validate email address: invalid format')
  .transform((email) => email.toLowerCase());

export const metadataSchema = z.record(z.string(), z.unknown());

/** GoTrue's password policy: minimum length, else 422 weak_password with its reasons. */
export function assertPasswordStrength(context: AuthContext, password: string) {
  const minimum = context.config.minimumPasswordLength;
  if (password.length < minimum) {
    throw new AuthError(
      422,
      'weak_password',
      `Password should be at least ${minimum} characters.`,
      {
        weak_password: { reasons: ['length'] },
      },
    );
  }
}

/** Merges metadata as GoTrue does: top-level keys replace, a null value deletes its key. */
export function mergeMetadata(
  current: Record<string, unknown> | null,
  update: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...(current ?? {}) };
  for (const [key, value] of Object.entries(update)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}
