// PKCE flow state (auth.flow_state): a code challenge recorded when an e-mail flow starts, an
// auth code handed to the redirect when its link is followed, and the code's one exchange.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { AuthError } from './auth-error.ts';
import { verifyCodeChallenge } from './crypto.ts';
import type { Queryable } from './users.ts';

/** GoTrue's FlowStateExpiryDuration: an issued auth code is good for five minutes. */
const AUTH_CODE_LIFETIME_MS = 5 * 60 * 1000;

/**
 * GoTrue's PKCEPrefix (api/pkce.go): a flow that sent a code challenge stores, and mails, its
 * e-mail token as `pkce_` + the hash; `GET /verify` reads the prefix to answer with `?code=`.
 */
export const PKCE_PREFIX = 'pkce_';

/** GoTrue's models.FlowType: PKCE when the request carried a code challenge. */
export type FlowType = 'pkce' | 'implicit';

export interface PkceRequest {
  code_challenge?: string | undefined;
  code_challenge_method?: string | undefined;
}

/**
 * The `authentication_method` of the flow a link of this verification type belongs to (GoTrue's
 * ParseAuthenticationMethod); undefined for a type no flow starts with (`email`).
 */
export function authenticationMethodFor(type: string): string | undefined {
  if (type.endsWith('signup')) return 'email/signup';
  return ['invite', 'magiclink', 'recovery', 'email_change'].includes(type) ? type : undefined;
}

/** Records the flow's code challenge when there is one (PKCE); says which flow it is. */
export async function startFlowState(
  db: Queryable,
  userId: string,
  method: string,
  pkce: PkceRequest,
): Promise<FlowType> {
  if (!pkce.code_challenge) return 'implicit';
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
  return 'pkce';
}

/**
 * The user's newest flow of this method (GoTrue's FindFlowStateByUserID); undefined when the user
 * has none.
 */
export async function findFlowState(
  db: Queryable,
  userId: string,
  method: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `select id from auth.flow_state where user_id = $1 and authentication_method = $2
     order by created_at desc limit 1`,
    [userId, method],
  );
  return rows[0]?.id;
}

/** The flow's auth code, marked issued now (GoTrue's RecordAuthCodeIssuedAtTime). */
export async function issueAuthCode(db: Queryable, flowStateId: string): Promise<string> {
  const { rows } = await db.query<{ auth_code: string }>(
    `update auth.flow_state set auth_code_issued_at = now(), updated_at = now()
     where id = $1 returning auth_code`,
    [flowStateId],
  );
  const code = rows[0]?.auth_code;
  if (!code) throw flowStateNotFound();
  return code;
}

/** GoTrue's verifyGet answer when a `pkce_` link has no flow to hand a code to. */
export function flowStateNotFound(): AuthError {
  return new AuthError(
    400,
    'flow_state_not_found',
    'No associated flow state found. No valid flow state found for user.',
  );
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
