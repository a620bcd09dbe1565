// The signed-in account's grants ("connected applications"), as Supabase Auth's OAuth server
// lists them: GET lists the live ones, DELETE revokes one (by ?client_id= or by id) together with
// every access and refresh token issued under it.
import type { Context } from 'hono';
import { verifyDashboardSession } from '../auth/dashboard-session.ts';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { OAuthError } from './oauth-error.ts';

interface GrantRow {
  id: string;
  client_id: string;
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  scope: string;
  resource: string;
  created_at: Date;
  last_used_at: Date;
}

export function handleListGrants(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const account = await verifyDashboardSession(context.db, c.req.header('authorization'), {
      secret: context.secret,
      authIssuer: context.authIssuer,
    });
    const rows = await context.db.query<GrantRow>(
      `select g.id, g.client_id, c.client_name, c.client_uri, c.logo_uri, g.scope, g.resource,
              g.created_at, g.last_used_at
         from private.oauth_grants g join private.oauth_clients c on c.client_id = g.client_id
        where g.user_id = $1 and g.revoked_at is null
        order by g.last_used_at desc`,
      [account.userId],
    );
    return c.json(
      rows.map((row) => ({
        id: row.id,
        client: {
          client_id: row.client_id,
          name: row.client_name,
          uri: row.client_uri,
          logo_uri: row.logo_uri,
        },
        scope: row.scope,
        resource: row.resource,
        created_at: row.created_at.toISOString(),
        last_used_at: row.last_used_at.toISOString(),
      })),
      200,
      { 'cache-control': 'no-store' },
    );
  };
}

export function handleRevokeGrant(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const account = await verifyDashboardSession(context.db, c.req.header('authorization'), {
      secret: context.secret,
      authIssuer: context.authIssuer,
    });
    const grantId = c.req.param('id');
    const clientId = c.req.query('client_id');
    if (!grantId && !clientId) {
      throw new OAuthError('invalid_request', 'Name the grant: /oauth/grants/<id> or ?client_id=.');
    }
    if (grantId && !/^[0-9a-f-]{36}$/i.test(grantId)) {
      throw new OAuthError('not_found', 'No such grant.');
    }
    const revoked = await context.db.transaction(async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `update private.oauth_grants set revoked_at = now()
          where user_id = $1 and revoked_at is null
            and ($2::uuid is null or id = $2::uuid) and ($3::text is null or client_id = $3)
          returning id`,
        [account.userId, grantId ?? null, clientId ?? null],
      );
      if (rows.length === 0) return 0;
      await client.query('select private.revoke_oauth_tokens($1, $2)', [
        rows.map((row) => row.id),
        [],
      ]);
      return rows.length;
    });
    if (revoked === 0) throw new OAuthError('not_found', 'No such grant.');
    context.logger.info({ event: 'oauth.grant_revoked', user_id: account.userId }, 'grant revoked');
    return c.body(null, 204);
  };
}
