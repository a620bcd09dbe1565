// The consent API the dashboard's consent page calls (001 §3, §5.2), shaped like Supabase Auth's
// OAuth server (GET /oauth/authorizations/<id>, then approve or deny) and authenticated by the
// dashboard session's access token in Authorization, never by a cookie: a cross-site page cannot
// send it, so the decision cannot be forged cross-site.
// A request is decided once (a conditional update), within its lifetime; approval issues a code
// bound to the account that pressed Allow.
import type { Context } from 'hono';
import type pg from 'pg';
import { verifyDashboardSession } from '../auth/dashboard-session.ts';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { OAuthError } from './oauth-error.ts';
import { buildRedirectUrl } from './redirect-response.ts';
import { redirectTarget } from './redirect-uris.ts';
import { SCOPE_DESCRIPTION } from './scope.ts';
import { generateSecret, hashSecret } from './secrets.ts';

interface RequestRow {
  id: string;
  client_id: string;
  issuer: string;
  redirect_uri: string;
  state: string | null;
  scope: string;
  resource: string;
  expires_at: Date;
  decided_at: Date | null;
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
}

const REQUEST_ID = /^[A-Za-z0-9_-]{32,64}$/;

async function loadRequest(
  query: (text: string, values: unknown[]) => Promise<RequestRow[]>,
  id: string,
  lock: boolean,
): Promise<RequestRow> {
  if (!REQUEST_ID.test(id)) throw new OAuthError('not_found', 'No such authorization request.');
  const rows = await query(
    `select r.id, r.client_id, r.issuer, r.redirect_uri, r.state, r.scope, r.resource,
            r.expires_at, r.decided_at, c.client_name, c.client_uri, c.logo_uri
       from private.oauth_authorization_requests r
       join private.oauth_clients c on c.client_id = r.client_id
      where r.id = $1 ${lock ? 'for update of r' : ''}`,
    [id],
  );
  const row = rows[0];
  if (!row) throw new OAuthError('not_found', 'No such authorization request.');
  if (row.decided_at) {
    throw new OAuthError('already_decided', 'This authorization request was already decided.');
  }
  if (row.expires_at <= new Date()) {
    throw new OAuthError('expired', 'This authorization request has expired; start again.');
  }
  return row;
}

function sessionOptions(context: ToolServerContext) {
  return { secret: context.secret, authIssuer: context.authIssuer };
}

export function handleGetAuthorization(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const account = await verifyDashboardSession(
      context.db,
      c.req.header('authorization'),
      sessionOptions(context),
    );
    const request = await loadRequest(
      (text, values) => context.db.query<RequestRow>(text, values),
      c.req.param('rid') ?? '',
      false,
    );
    return c.json(
      {
        authorization_id: request.id,
        client: {
          client_id: request.client_id,
          name: request.client_name,
          uri: request.client_uri,
          logo_uri: request.logo_uri,
        },
        redirect_uri: request.redirect_uri,
        redirect_host: redirectTarget(request.redirect_uri),
        scope: request.scope,
        scope_description: SCOPE_DESCRIPTION,
        resource: request.resource,
        user: { id: account.userId, email: account.email, role: account.role },
        expires_at: request.expires_at.toISOString(),
      },
      200,
      { 'cache-control': 'no-store' },
    );
  };
}

async function approve(
  client: pg.PoolClient,
  request: RequestRow,
  userId: string,
  codeTtlSeconds: number,
): Promise<string> {
  const grant = await client.query<{ id: string }>(
    `insert into private.oauth_grants (user_id, client_id, scope, resource)
     values ($1, $2, $3, $4)
     on conflict (user_id, client_id) where revoked_at is null
       do update set scope = excluded.scope, resource = excluded.resource, last_used_at = now()
     returning id`,
    [userId, request.client_id, request.scope, request.resource],
  );
  const code = generateSecret(32);
  await client.query(
    `insert into private.oauth_codes (code_hash, request_id, grant_id, expires_at)
     values ($1, $2, $3, now() + make_interval(secs => $4))`,
    [hashSecret(code), request.id, grant.rows[0]?.id, codeTtlSeconds],
  );
  return code;
}

export function handleConsent(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const account = await verifyDashboardSession(
      context.db,
      c.req.header('authorization'),
      sessionOptions(context),
    );
    const body = await c.req.json().catch(() => undefined);
    const action = (body as { action?: unknown } | undefined)?.action;
    if (action !== 'approve' && action !== 'deny') {
      throw new OAuthError(
        'invalid_request',
        'The body must be {"action":"approve"} or {"action":"deny"}.',
      );
    }
    const redirectUrl = await context.db.transaction(async (client) => {
      const request = await loadRequest(
        async (text, values) => (await client.query<RequestRow>(text, values)).rows,
        c.req.param('rid') ?? '',
        true,
      );
      await client.query(
        `update private.oauth_authorization_requests
            set decided_at = now(), decision = $2, user_id = $3
          where id = $1`,
        [request.id, action === 'approve' ? 'approved' : 'denied', account.userId],
      );
      if (action === 'deny') {
        return buildRedirectUrl(request.redirect_uri, {
          error: 'access_denied',
          error_description: 'The user denied the request.',
          state: request.state,
          iss: request.issuer,
        });
      }
      const code = await approve(client, request, account.userId, context.config.codeTtlSeconds);
      return buildRedirectUrl(request.redirect_uri, {
        code,
        state: request.state,
        iss: request.issuer,
      });
    });
    context.logger.info(
      { event: 'oauth.consent', action, user_id: account.userId },
      'authorization request decided',
    );
    return c.json({ redirect_url: redirectUrl }, 200, { 'cache-control': 'no-store' });
  };
}
