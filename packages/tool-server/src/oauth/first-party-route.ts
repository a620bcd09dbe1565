// POST /first-party-token (001 §1): the dashboard exchanges its live session (the session's
// access token as bearer) for an OAuth-type token of the same account, so consoles hold the same
// kind of token as MCP clients: recorded in api_tokens, revocable, accepted on every surface.
// No refresh token: while the session lives, the dashboard exchanges it again.
import type { Context } from 'hono';
import { verifyDashboardSession } from '../auth/dashboard-session.ts';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { issueAccessToken } from './access-tokens.ts';
import { DASHBOARD_SCOPE } from './scope.ts';

/** The first-party client every exchanged token names (seeded by the OAuth-state migration). */
export const FIRST_PARTY_CLIENT_ID = 'dashboard';

export function handleFirstPartyToken(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const account = await verifyDashboardSession(context.db, c.req.header('authorization'), {
      secret: context.secret,
      authIssuer: context.authIssuer,
    });
    const origin = c.get('origin');
    const access = await context.db.transaction((db) =>
      issueAccessToken(
        db,
        {
          userId: account.userId,
          email: account.email,
          clientId: FIRST_PARTY_CLIENT_ID,
          scope: DASHBOARD_SCOPE,
          issuer: origin,
          resource: origin,
          grantId: null,
          familyId: null,
        },
        context.secret,
        context.config.accessTokenTtlSeconds,
      ),
    );
    return c.json(
      {
        access_token: access.token,
        token_type: 'Bearer',
        expires_in: access.expiresIn,
        scope: DASHBOARD_SCOPE,
      },
      200,
      { 'cache-control': 'no-store', pragma: 'no-cache' },
    );
  };
}
