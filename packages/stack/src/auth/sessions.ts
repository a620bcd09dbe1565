// auth.sessions and auth.refresh_tokens: sign-in creates a session and its first refresh token;
// the refresh grant rotates the token, and a rotated token presented again after the reuse
// interval ends the whole session (GoTrue's reuse detection, internal/tokens/service.go).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { AuthError } from './auth-error.ts';
import { type AmrEntry, generateRefreshToken } from './crypto.ts';
import type { Queryable } from './users.ts';

export interface SessionRow {
  id: string;
  user_id: string;
  created_at: Date;
  not_after: Date | null;
}

interface RefreshTokenRow {
  id: string;
  token: string;
  user_id: string;
  revoked: boolean;
  updated_at: Date;
  session_id: string;
}

export async function createSession(
  db: Queryable,
  userId: string,
  method: string,
  userAgent: string | undefined,
): Promise<{ session: SessionRow; refreshToken: string }> {
  const { rows } = await db.query<SessionRow>(
    `insert into auth.sessions (id, user_id, created_at, updated_at, aal, user_agent)
     values ($1, $2, now(), now(), 'aal1', $3) returning *`,
    [randomUUID(), userId, userAgent ?? null],
  );
  const session = rows[0] as SessionRow;
  await db.query(
    `insert into auth.mfa_amr_claims (session_id, created_at, updated_at, authentication_method, id)
     values ($1, now(), now(), $2, $3)`,
    [session.id, method, randomUUID()],
  );
  const refreshToken = await insertRefreshToken(db, session.id, userId, null);
  return { session, refreshToken };
}

async function insertRefreshToken(
  db: Queryable,
  sessionId: string,
  userId: string,
  parent: string | null,
): Promise<string> {
  const token = generateRefreshToken();
  await db.query(
    `insert into auth.refresh_tokens (instance_id, token, user_id, revoked, created_at, updated_at, parent, session_id)
     values ('00000000-0000-0000-0000-000000000000', $1, $2, false, now(), now(), $3, $4)`,
    [token, userId, parent, sessionId],
  );
  return token;
}

/** The session's sign-in methods, for the `amr` claim (RFC 8176). */
export async function findSessionAmr(db: Queryable, sessionId: string): Promise<AmrEntry[]> {
  const { rows } = await db.query<{ authentication_method: string; created_at: Date }>(
    'select authentication_method, created_at from auth.mfa_amr_claims where session_id = $1 order by created_at',
    [sessionId],
  );
  return rows.map((row) => ({
    method: row.authentication_method,
    timestamp: Math.floor(row.created_at.getTime() / 1000),
  }));
}

export async function findSession(db: Queryable, id: string): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>('select * from auth.sessions where id = $1', [id]);
  return rows[0];
}

export interface RotationResult {
  sessionId: string;
  userId: string;
  refreshToken: string;
}

const alreadyUsed = () =>
  new AuthError(400, 'refresh_token_already_used', 'Invalid Refresh Token: Already Used');
const notFound = () =>
  new AuthError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found');

/**
 * Exchanges a refresh token for its successor inside one transaction (row lock on the token),
 * with GoTrue's reuse rules for a token that was already rotated:
 * - its direct successor is still active: answer with that successor (a retried request);
 * - it was rotated less than `reuseIntervalSeconds` ago: issue a new successor (concurrent tabs);
 * - otherwise: suspected theft, the session is deleted with every refresh token of it, as
 *   GoTrue's LogoutSession on detected reuse: no token of it works again, and its access tokens
 *   are refused where the session is checked (GET /user: session_not_found). Revoking the tokens
 *   in place instead would touch their `updated_at` and put them back inside the interval.
 */
export async function rotateRefreshToken(
  pool: pg.Pool,
  presented: string,
  reuseIntervalSeconds: number,
): Promise<RotationResult> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<RefreshTokenRow & { now: Date }>(
      'select *, now() as now from auth.refresh_tokens where token = $1 for update',
      [presented],
    );
    const current = rows[0];
    if (!current) throw notFound();
    const session = await findSession(client, current.session_id);
    if (!session) throw notFound();
    let refreshToken: string;
    if (current.revoked) {
      const child = await client.query<{ token: string }>(
        'select token from auth.refresh_tokens where parent = $1 and revoked = false',
        [current.token],
      );
      const sinceRotation = (current.now.getTime() - current.updated_at.getTime()) / 1000;
      if (child.rows[0]) {
        refreshToken = child.rows[0].token;
      } else if (sinceRotation < reuseIntervalSeconds) {
        refreshToken = await insertRefreshToken(
          client,
          current.session_id,
          current.user_id,
          current.token,
        );
      } else {
        await client.query('delete from auth.sessions where id = $1', [current.session_id]);
        await client.query('commit');
        throw alreadyUsed();
      }
    } else {
      await client.query(
        'update auth.refresh_tokens set revoked = true, updated_at = now() where id = $1',
        [current.id],
      );
      refreshToken = await insertRefreshToken(
        client,
        current.session_id,
        current.user_id,
        current.token,
      );
    }
    await client.query(
      'update auth.sessions set refreshed_at = now(), updated_at = now() where id = $1',
      [current.session_id],
    );
    await client.query('commit');
    return { sessionId: current.session_id, userId: session.user_id, refreshToken };
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export type LogoutScope = 'global' | 'local' | 'others';

/** POST /logout: local ends this session, others every other one, global all of them. */
export async function endSessions(
  db: Queryable,
  userId: string,
  sessionId: string,
  scope: LogoutScope,
) {
  if (scope === 'global') {
    await db.query('delete from auth.sessions where user_id = $1', [userId]);
    return;
  }
  const condition = scope === 'local' ? 'id = $2' : 'id <> $2';
  await db.query(`delete from auth.sessions where user_id = $1 and ${condition}`, [
    userId,
    sessionId,
  ]);
}
