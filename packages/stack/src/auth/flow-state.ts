// PKCE flow state (auth.flow_state): a code challenge recorded when an e-mail flow starts, an
// auth code handed to the redirect when its link is followed, and the code's one exchange.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { AuthError } from './auth-error.ts';
import { verifyCodeChallenge } from './crypto.ts';
import type { Queryable } from './users.ts';

/** GoTrue's FlowStateExpiryDuration: an issued auth code is good for five minutes. */
const AUTH_CODE_LIFETIME_MS = 5 * 60 * 1000;

export interface PkceRequest {
  code_challenge?: string | undefined;
  code_challenge_method?: string | undefined;
}

export async function startFlowState(
  db: Queryable,
  userId: string,
  method: string,
  pkce: PkceRequest,
): Promise<void> {
  if (!pkce.code_challenge) return;
  const challengeMethod = (pkce.code_challenge_method ?? 's256').toLowerCase();
  if (challengeMethod !== 's256' && challengeMethod !== 'plain') {
    throw new AuthError(
      400,
      'validation_failed',
      'Code challenge method must be one of s256 or plain',
    );
  }
  await db.query(
    `insert into auth.flow_state (id, user_id, auth_code, code_challenge_method, code_challenge,
       provider_type, created_at, updated_at, authentication_method)
     values ($1, $2, $3, $4, $5, 'email', now(), now(), $6)`,
    [randomUUID(), userId, randomUUID(), challengeMethod, pkce.code_challenge, method],
  );
}

/** The auth code of the user's newest pending flow, marked issued; undefined when none. */
export async function issueAuthCode(db: Queryable, userId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ auth_code: string }>(
    `update auth.flow_state set auth_code_issued_at = now(), updated_at = now()
     where id = (select id from auth.flow_state where user_id = $1 and auth_code_issued_at is null
                 order by created_at desc limit 1)
     returning auth_code`,
    [userId],
  );
  return rows[0]?.auth_code;
}

/** Consumes an auth code with its verifier (RFC 7636 §4.6); a wrong verifier keeps the code. */
export async function redeemAuthCode(
  pool: pg.Pool,
  authCode: string,
  verifier: string,
): Promise<{ userId: string; method: string }> {
  const { rows } = await pool.query<{
    id: string;
    user_id: string;
    code_challenge: string;
    code_challenge_method: 's256' | 'plain';
    authentication_method: string;
    auth_code_issued_at: Date | null;
  }>('select * from auth.flow_state where auth_code = $1 and auth_code_issued_at is not null', [
    authCode,
  ]);
  const flow = rows[0];
  if (!flow) {
    throw new AuthError(
      404,
      'flow_state_not_found',
      'invalid flow state, no valid flow state found',
    );
  }
  if (Date.now() - (flow.auth_code_issued_at as Date).getTime() > AUTH_CODE_LIFETIME_MS) {
    throw new AuthError(400, 'flow_state_expired', 'invalid flow state, flow state has expired');
  }
  if (!verifyCodeChallenge(verifier, flow.code_challenge, flow.code_challenge_method)) {
    throw new AuthError(
      403,
      'bad_code_verifier',
      'code challenge does not match previously saved code verifier',
    );
  }
  const deleted = await pool.query('delete from auth.flow_state where id = $1', [flow.id]);
  if (deleted.rowCount !== 1) {
    throw new AuthError(
      404,
      'flow_state_not_found',
      'invalid flow state, no valid flow state found',
    );
  }
  return { userId: flow.user_id, method: flow.authentication_method };
}
