// The session JSON every sign-in path returns (GoTrue AccessTokenResponse):
// {access_token, token_type, expires_in, expires_at, refresh_token, user}.
import type { AuthContext } from './auth-context.ts';
import { type AmrEntry, signAccessToken } from './crypto.ts';
import { createSession, findSessionAmr } from './sessions.ts';
import {
  loadUserJson,
  type Queryable,
  type UserJson,
  type UserRow,
  updateUserColumns,
} from './users.ts';

export interface SessionJson {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  expires_at: number;
  refresh_token: string;
  user: UserJson;
}

async function buildSessionJson(
  db: Queryable,
  context: AuthContext,
  user: UserRow,
  sessionId: string,
  refreshToken: string,
  amr: AmrEntry[],
): Promise<SessionJson> {
  const now = Math.floor(Date.now() / 1000);
  const { token, expiresAt } = await signAccessToken(
    {
      issuer: context.config.externalUrl,
      userId: user.id,
      email: user.email ?? '',
      phone: user.phone ?? '',
      role: user.role || 'authenticated',
      appMetadata: user.raw_app_meta_data ?? {},
      userMetadata: user.raw_user_meta_data ?? {},
      sessionId,
      amr,
      isAnonymous: user.is_anonymous,
      expiresInSeconds: context.config.jwtExpirySeconds,
      now,
    },
    context.config.jwtSecret,
  );
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: context.config.jwtExpirySeconds,
    expires_at: expiresAt,
    refresh_token: refreshToken,
    user: await loadUserJson(db, user),
  };
}

/** Starts a new session for a user who just proved who they are (`method` goes into `amr`). */
export async function signIn(
  db: Queryable,
  context: AuthContext,
  user: UserRow,
  method: string,
  userAgent: string | undefined,
): Promise<SessionJson> {
  const signedIn = await updateUserColumns(db, user.id, { last_sign_in_at: new Date() });
  const { session, refreshToken } = await createSession(db, user.id, method, userAgent);
  const amr = [{ method, timestamp: Math.floor(session.created_at.getTime() / 1000) }];
  return buildSessionJson(db, context, signedIn, session.id, refreshToken, amr);
}

/** A fresh access token for an existing session (refresh grant); `amr` keeps the sign-in time. */
export async function continueSession(
  db: Queryable,
  context: AuthContext,
  user: UserRow,
  sessionId: string,
  refreshToken: string,
): Promise<SessionJson> {
  const amr = await findSessionAmr(db, sessionId);
  return buildSessionJson(db, context, user, sessionId, refreshToken, amr);
}
