// POST /token (RFC 6749 §3.2, OAuth 2.1 §4.1.3 and §4.3): the authorization_code grant (PKCE
// verifier, redirect_uri exact-matched again, single-use 60 s code whose replay revokes what it
// issued) and the refresh_token grant (rotation, reuse revokes the family). Errors are RFC 6749
// §5.2 JSON with Cache-Control: no-store.
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import type pg from 'pg';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { issueAccessToken } from './access-tokens.ts';
import { authenticateClient } from './client-authentication.ts';
import type { OAuthClient } from './clients.ts';
import { readForm } from './form-body.ts';
import { OAuthError } from './oauth-error.ts';
import { computeCodeChallenge, isWellFormedVerifier } from './pkce.ts';
import { issueRefreshToken, lockRefreshToken } from './refresh-tokens.ts';
import { namesThisResource } from './resource.ts';
import { hashSecret } from './secrets.ts';

interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/** What a failed grant attempt leaves behind: the failure to report after the commit. */
type GrantOutcome = { ok: true; response: TokenResponse } | { ok: false; error: OAuthError };

const invalidGrant = (description: string): GrantOutcome => ({
  ok: false,
  error: new OAuthError('invalid_grant', description),
});

interface CodeRow {
  code_hash: string;
  expires_at: Date;
  used_at: Date | null;
  family_id: string | null;
  grant_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  issuer: string;
  scope: string;
  resource: string;
  user_id: string;
  email: string | null;
  grant_revoked_at: Date | null;
  account_suspended: boolean;
}

function mayRefresh(client: OAuthClient): boolean {
  return client.grant_types.includes('refresh_token');
}

async function exchangeCode(
  context: ToolServerContext,
  client: OAuthClient,
  form: URLSearchParams,
  origin: string,
): Promise<TokenResponse> {
  const code = form.get('code');
  const verifier = form.get('code_verifier');
  const redirectUri = form.get('redirect_uri');
  if (!code) throw new OAuthError('invalid_request', 'code is required.');
  if (!verifier) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE).');
  if (!isWellFormedVerifier(verifier)) {
    throw new OAuthError('invalid_request', 'code_verifier must be 43-128 unreserved characters.');
  }
  if (!redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required.');
  const resource = form.get('resource');
  const outcome = await context.db.transaction(async (db): Promise<GrantOutcome> => {
    const { rows } = await db.query<CodeRow>(
      `select k.code_hash, k.expires_at, k.used_at, k.family_id, k.grant_id, r.client_id,
              r.redirect_uri, r.code_challenge, r.issuer, g.scope, r.resource, g.user_id, u.email,
              g.revoked_at as grant_revoked_at,
              (u.deleted_at is not null or coalesce(u.banned_until > now(), false)) as account_suspended
         from private.oauth_codes k
         join private.oauth_authorization_requests r on r.id = k.request_id
         join private.oauth_grants g on g.id = k.grant_id
         join auth.users u on u.id = g.user_id
        where k.code_hash = $1
        for update of k`,
      [hashSecret(code)],
    );
    const row = rows[0];
    if (!row) return invalidGrant('The code is unknown.');
    if (row.used_at) {
      // OAuth 2.1 §4.1.3: a code presented twice revokes the tokens its first exchange issued.
      if (row.family_id)
        await db.query('select private.revoke_oauth_tokens($1, $2)', [[], [row.family_id]]);
      context.logger.warn(
        { event: 'oauth.code_replayed', client_id: client.client_id },
        'code replayed',
      );
      return invalidGrant('The code was already used; the tokens it issued are revoked.');
    }
    // Whatever follows, this presentation consumes the code.
    await db.query('update private.oauth_codes set used_at = now() where code_hash = $1', [
      row.code_hash,
    ]);
    if (row.expires_at <= new Date()) return invalidGrant('The code has expired.');
    if (row.client_id !== client.client_id)
      return invalidGrant('The code was issued to another client.');
    if (row.redirect_uri !== redirectUri) {
      return invalidGrant('redirect_uri differs from the one in the authorization request.');
    }
    if (computeCodeChallenge(verifier) !== row.code_challenge) {
      return invalidGrant('The code_verifier does not match the code_challenge.');
    }
    if (row.issuer !== origin) return invalidGrant('The code was issued by another host.');
    if (row.grant_revoked_at) return invalidGrant('The grant behind this code was revoked.');
    if (row.account_suspended) return invalidGrant('The account is suspended or deleted.');
    if (resource && !namesThisResource(resource, row.resource)) {
      return {
        ok: false,
        error: new OAuthError('invalid_target', 'resource differs from the one authorized.'),
      };
    }
    const familyId = randomUUID();
    await db.query('update private.oauth_codes set family_id = $2 where code_hash = $1', [
      row.code_hash,
      familyId,
    ]);
    return { ok: true, response: await issueTokens(context, db, client, row, familyId) };
  });
  if (!outcome.ok) throw outcome.error;
  return outcome.response;
}

async function issueTokens(
  context: ToolServerContext,
  db: pg.PoolClient,
  client: OAuthClient,
  grant: {
    grant_id: string;
    user_id: string;
    email: string | null;
    scope: string;
    resource: string;
    issuer: string;
  },
  familyId: string,
): Promise<TokenResponse> {
  const access = await issueAccessToken(
    db,
    {
      userId: grant.user_id,
      email: grant.email,
      clientId: client.client_id,
      scope: grant.scope,
      issuer: grant.issuer,
      resource: grant.resource,
      grantId: grant.grant_id,
      familyId,
    },
    context.secret,
    context.config.accessTokenTtlSeconds,
  );
  await db.query('update private.oauth_grants set last_used_at = now() where id = $1', [
    grant.grant_id,
  ]);
  const response: TokenResponse = {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: access.expiresIn,
    scope: grant.scope,
  };
  if (mayRefresh(client)) {
    response.refresh_token = await issueRefreshToken(db, {
      familyId,
      grantId: grant.grant_id,
      issuer: grant.issuer,
      ttlSeconds: context.config.refreshTokenTtlSeconds,
    });
  }
  return response;
}

async function refresh(
  context: ToolServerContext,
  client: OAuthClient,
  form: URLSearchParams,
  origin: string,
): Promise<TokenResponse> {
  const token = form.get('refresh_token');
  if (!token) throw new OAuthError('invalid_request', 'refresh_token is required.');
  if (!mayRefresh(client)) {
    throw new OAuthError(
      'unauthorized_client',
      'This client did not register the refresh_token grant.',
    );
  }
  const resource = form.get('resource');
  const outcome = await context.db.transaction(async (db): Promise<GrantOutcome> => {
    const row = await lockRefreshToken(db, token);
    if (!row) return invalidGrant('The refresh token is unknown.');
    if (row.client_id !== client.client_id)
      return invalidGrant('The refresh token belongs to another client.');
    if (row.revoked_at || row.grant_revoked_at)
      return invalidGrant('The refresh token was revoked.');
    if (row.account_suspended) return invalidGrant('The account is suspended or deleted.');
    const withinReuseInterval =
      row.rotated_seconds_ago !== null &&
      row.rotated_seconds_ago <= context.config.refreshReuseIntervalSeconds;
    if (row.rotated_at && !withinReuseInterval) {
      await db.query('select private.revoke_oauth_tokens($1, $2)', [[], [row.family_id]]);
      context.logger.warn(
        { event: 'oauth.refresh_reused', client_id: client.client_id, user_id: row.user_id },
        'rotated refresh token presented again; family revoked',
      );
      return invalidGrant('The refresh token was already used; sign in again.');
    }
    if (row.expires_at <= new Date()) return invalidGrant('The refresh token has expired.');
    if (row.issuer !== origin) return invalidGrant('The refresh token was issued by another host.');
    if (resource && !namesThisResource(resource, row.resource)) {
      return {
        ok: false,
        error: new OAuthError('invalid_target', 'resource differs from the one authorized.'),
      };
    }
    // The first rotation time stays: retries inside the interval never extend it.
    await db.query(
      'update private.oauth_refresh_tokens set rotated_at = coalesce(rotated_at, now()) where token_hash = $1',
      [row.token_hash],
    );
    return { ok: true, response: await issueTokens(context, db, client, row, row.family_id) };
  });
  if (!outcome.ok) throw outcome.error;
  return outcome.response;
}

export function handleToken(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const form = await readForm(c.req.raw);
    const client = await authenticateClient(context.clients, c.req.header('authorization'), form);
    const grantType = form.get('grant_type');
    const origin = c.get('origin');
    let response: TokenResponse;
    if (grantType === 'authorization_code') {
      if (!client.grant_types.includes('authorization_code')) {
        throw new OAuthError(
          'unauthorized_client',
          'This client did not register authorization_code.',
        );
      }
      response = await exchangeCode(context, client, form, origin);
    } else if (grantType === 'refresh_token') {
      response = await refresh(context, client, form, origin);
    } else if (!grantType) {
      throw new OAuthError('invalid_request', 'grant_type is required.');
    } else {
      throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported.`);
    }
    return c.json(response, 200, { 'cache-control': 'no-store', pragma: 'no-cache' });
  };
}
