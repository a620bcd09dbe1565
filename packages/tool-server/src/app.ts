// The tool server's HTTP app: the host check (only our origins are served), CORS, the OAuth
// authorization server, the consent API for the dashboard, and the MCP endpoint behind bearer
// authentication. Every OAuth failure is rendered in one place as {error, error_description}.
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { androidSetupRoutes } from './android-setup/android-setup-routes.ts';
import type { ToolServerContext, ToolServerEnv } from './context.ts';
import { confirmTokenLive, verifyTokenSignature } from './http/bearer-auth.ts';
import { clientAddress } from './http/client-address.ts';
import { type CorsPolicy, corsHeaders, preflightResponse } from './http/cors.ts';
import { mcpBodyLimit, readMcpBody } from './mcp/mcp-body.ts';
import { admitToolCalls, closeWhenAnswered } from './mcp/tool-call-gate.ts';
import { handleAuthorize } from './oauth/authorize-route.ts';
import { handleConsent, handleGetAuthorization } from './oauth/consent-routes.ts';
import { handleFirstPartyToken } from './oauth/first-party-route.ts';
import { handleListGrants, handleRevokeGrant } from './oauth/grants-routes.ts';
import { authorizationServerMetadata, protectedResourceMetadata } from './oauth/metadata.ts';
import { OAuthError, renderOAuthError, storeUnavailable } from './oauth/oauth-error.ts';
import { handleRegister } from './oauth/register-route.ts';
import { handleRevoke } from './oauth/revoke-route.ts';
import { handleToken } from './oauth/token-route.ts';
import { StoreUnavailableError } from './store/database.ts';

type Handler = (c: Context<ToolServerEnv>) => Promise<Response>;

/** 001 §7: an OAuth endpoint answers within a few seconds even when the store hangs. */
function withDeadline(handler: Handler, deadlineMs: number): Handler {
  return async (c) => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(storeUnavailable()), deadlineMs);
    });
    try {
      return await Promise.race([handler(c), deadline]);
    } finally {
      clearTimeout(timer);
    }
  };
}

function withCors(policy: CorsPolicy): MiddlewareHandler<ToolServerEnv> {
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (c.req.method === 'OPTIONS') return preflightResponse(policy, origin);
    await next();
    for (const [name, value] of Object.entries(corsHeaders(policy, origin))) {
      c.res.headers.set(name, value);
    }
    return undefined;
  };
}

export function createToolServerApp(context: ToolServerContext): Hono<ToolServerEnv> {
  const app = new Hono<ToolServerEnv>();
  const { config } = context;
  const publicCors = withCors({ kind: 'public' });
  const dashboardCors = withCors({ kind: 'listed', origins: [config.dashboardUrl] });
  // MCP transports (2025-11-25): a browser may call the MCP endpoint only from our origins or the
  // dashboard's; CORS answers exactly those, so a foreign page is refused at its preflight too.
  const mcpOrigins = [...context.origins.all, config.dashboardUrl];
  const mcpCors = withCors({ kind: 'listed', origins: mcpOrigins });
  const deadline = (handler: Handler) => withDeadline(handler, config.storeDeadlineMs);

  // OAuth bodies are small; refuse a large one while it streams instead of buffering it.
  const smallBody = bodyLimit({
    maxSize: 64 * 1024,
    onError: () =>
      renderOAuthError(
        new OAuthError('invalid_request', 'The body is larger than 64 KiB.', { status: 413 }),
      ),
  });

  // DNS rebinding and host-header injection: only allowlisted hosts are served (001 §4.1).
  app.use('*', async (c, next) => {
    const origin = context.origins.fromHost(c.req.header('host'));
    if (!origin) {
      return c.json(
        { error: 'invalid_request', error_description: 'This host is not served here.' },
        421,
      );
    }
    c.set('origin', origin);
    const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)
      ?.incoming;
    c.set(
      'clientAddress',
      clientAddress(
        incoming?.socket?.remoteAddress,
        c.req.header('x-forwarded-for'),
        config.trustedProxyHops,
      ),
    );
    await next();
    return undefined;
  });

  for (const path of [
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/*',
    '/.well-known/openid-configuration',
    '/.well-known/openid-configuration/*',
  ]) {
    app.on(['GET', 'OPTIONS'], path, publicCors, (c) =>
      c.json(authorizationServerMetadata(c.get('origin'))),
    );
  }
  for (const path of [
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/',
  ]) {
    app.on(['GET', 'OPTIONS'], path, publicCors, (c) =>
      c.json(protectedResourceMetadata(c.get('origin'))),
    );
  }

  for (const path of ['/register', '/token', '/revoke', '/oauth/*', '/first-party-token']) {
    app.use(path, smallBody);
  }
  app.on(['POST', 'OPTIONS'], '/register', publicCors, deadline(handleRegister(context)));
  app.get('/authorize', deadline(handleAuthorize(context)));
  app.on(['POST', 'OPTIONS'], '/token', publicCors, deadline(handleToken(context)));
  app.on(['POST', 'OPTIONS'], '/revoke', publicCors, deadline(handleRevoke(context)));

  app.use('/oauth/*', dashboardCors);
  app.use('/first-party-token', dashboardCors);
  app.get('/oauth/authorizations/:rid', deadline(handleGetAuthorization(context)));
  app.post('/oauth/authorizations/:rid/consent', deadline(handleConsent(context)));
  app.get('/oauth/grants', deadline(handleListGrants(context)));
  app.delete('/oauth/grants', deadline(handleRevokeGrant(context)));
  app.delete('/oauth/grants/:id', deadline(handleRevokeGrant(context)));
  app.post('/first-party-token', deadline(handleFirstPartyToken(context)));

  // Android over USB: only where this machine's adb and proxy are configured; otherwise 404. No
  // store deadline: a connect waits for the phone's traffic (up to trafficTimeoutMs).
  if (config.androidSetup) {
    const android = androidSetupRoutes(context, config.androidSetup);
    app.use('/dashboard/android/*', dashboardCors, smallBody);
    app.get('/dashboard/android/devices', android.listDevices);
    app.post('/dashboard/android/connect', android.connect);
    app.post('/dashboard/android/revert', android.revert);
  }

  // MCP endpoint. MCP transports: a present Origin that we do not serve is refused with 403.
  app.on(['GET', 'POST', 'DELETE', 'OPTIONS'], '/', mcpCors, mcpBodyLimit, async (c) => {
    const requestOrigin = c.req.header('origin');
    if (requestOrigin && !mcpOrigins.includes(requestOrigin)) {
      return c.json(
        { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Origin not allowed' } },
        403,
      );
    }
    const signed = await verifyTokenSignature(
      c.req.header('authorization'),
      c.get('origin'),
      context.secret,
      context.signatures,
    );
    const body = await readMcpBody(c.req.raw);
    // Fair use: tools/call over its token's or account's limits gets 429 before any pool is used.
    const admitted = admitToolCalls(context.admission, body.parsedBody, signed.claims);
    if (admitted instanceof Response) return admitted;
    try {
      const verified = await confirmTokenLive(context.db, signed, c.get('origin'));
      const caller = await context.profiles.profileOf(verified.claims);
      // 2025-11-25 listen stream: GET with SSE (the SDK's stateless legacy leg answers 405).
      // Held by the token and its account, which bound how many stay open (listen-streams.ts).
      if (c.req.method === 'GET' && (c.req.header('accept') ?? '').includes('text/event-stream')) {
        const holder = { token: String(verified.claims.jti), user: String(verified.claims.sub) };
        return context.listenStreams.open(holder, verified.expiresAt, {});
      }
      const response = await context.mcp.fetch(body.request, {
        parsedBody: body.parsedBody,
        authInfo: {
          token: verified.token,
          clientId: verified.clientId,
          scopes: verified.scopes,
          expiresAt: verified.expiresAt,
          resource: new URL(verified.resource),
          extra: { caller, admission: admitted ?? undefined },
        },
      });
      return admitted ? closeWhenAnswered(response, admitted) : response;
    } catch (error) {
      // Refused before any call ran (a revoked token, the store away): nothing counts or is spent.
      admitted?.cancel();
      throw error;
    }
  });

  app.notFound((c) => c.json({ error: 'not_found', error_description: 'No such endpoint.' }, 404));

  app.onError((error) => {
    if (error instanceof OAuthError) {
      if (error.status >= 500) context.logger.warn({ err: error.cause ?? error }, error.message);
      return renderOAuthError(error);
    }
    if (error instanceof StoreUnavailableError) {
      context.logger.warn({ err: error.cause }, 'store unavailable');
      return renderOAuthError(storeUnavailable(error));
    }
    context.logger.error({ err: error }, 'unexpected failure');
    return renderOAuthError(
      new OAuthError('server_error', 'The server failed unexpectedly; retrying will not help.'),
    );
  });
  return app;
}
