// POST /revoke (RFC 7009): the client revokes one of its tokens. A refresh token takes its whole
// family (and the access tokens it issued) with it; an access token is revoked by jti. Unknown,
// foreign or already revoked tokens are answered 200 too (RFC 7009 §2.2), so the answer tells an
// attacker nothing.
import type { Context } from 'hono';
import { decodeJwt } from 'jose';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { authenticateClient } from './client-authentication.ts';
import { readForm } from './form-body.ts';
import { OAuthError } from './oauth-error.ts';
import { hashSecret } from './secrets.ts';

async function revokeRefreshToken(context: ToolServerContext, token: string, clientId: string) {
  return context.db.transaction(async (db) => {
    const { rows } = await db.query<{ family_id: string }>(
      `select t.family_id from private.oauth_refresh_tokens t
         join private.oauth_grants g on g.id = t.grant_id
        where t.token_hash = $1 and g.client_id = $2`,
      [hashSecret(token), clientId],
    );
    const family = rows[0]?.family_id;
    if (family) await db.query('select private.revoke_oauth_tokens($1, $2)', [[], [family]]);
    return family !== undefined;
  });
}

async function revokeAccessToken(context: ToolServerContext, token: string, clientId: string) {
  let jti: unknown;
  try {
    jti = decodeJwt(token).jti;
  } catch {
    return false;
  }
  if (typeof jti !== 'string') return false;
  // Only the client the token was issued to may revoke it; the row decides, not the claims.
  const rows = await context.db.query(
    `update public.api_tokens set revoked_at = now()
      where jti = $1 and client_id = $2 and label = 'oauth' and revoked_at is null
      returning jti`,
    [jti, clientId],
  );
  return rows.length > 0;
}

export function handleRevoke(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const form = await readForm(c.req.raw);
    const client = await authenticateClient(context.clients, c.req.header('authorization'), form);
    const token = form.get('token');
    if (!token) throw new OAuthError('invalid_request', 'token is required.');
    const hint = form.get('token_type_hint');
    const order =
      hint === 'access_token'
        ? [revokeAccessToken, revokeRefreshToken]
        : [revokeRefreshToken, revokeAccessToken];
    for (const revoke of order) {
      if (await revoke(context, token, client.client_id)) break;
    }
    return c.body(null, 200, { 'cache-control': 'no-store' });
  };
}
