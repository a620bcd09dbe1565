// GET /authorize (RFC 6749 §4.1.1, OAuth 2.1 §4.1.1, 001 §4.1): checks the client and its
// redirect URI first (failures are shown, never redirected), then the rest of the request
// (failures go back to the client's redirect URI with `iss`), stores the request and sends the
// browser to the dashboard's consent page with the request id as the only parameter.
import type { Context } from 'hono';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { renderErrorPage } from '../http/error-page.ts';
import { StoreUnavailableError } from '../store/database.ts';
import type { OAuthClient } from './clients.ts';
import { OAuthError, storeUnavailable } from './oauth-error.ts';
import { isWellFormedChallenge } from './pkce.ts';
import { buildRedirectUrl } from './redirect-response.ts';
import { matchesRegisteredRedirect, redirectUriProblem } from './redirect-uris.ts';
import { namesThisResource } from './resource.ts';
import { DASHBOARD_SCOPE } from './scope.ts';
import { generateSecret } from './secrets.ts';

const MAX_STATE_LENGTH = 2_000;

/** Resolves client and redirect URI; throws what must be shown rather than redirected. */
async function resolveClientAndRedirect(
  context: ToolServerContext,
  query: URLSearchParams,
): Promise<{ client: OAuthClient; redirectUri: string }> {
  const clientId = query.get('client_id');
  if (!clientId) throw new OAuthError('invalid_request', 'The request names no client_id.');
  const client = await context.clients.resolve(clientId);
  if (!client || client.source === 'first_party') {
    throw new OAuthError(
      'invalid_client',
      'This application is not registered here. Ask it to register again (client_id unknown).',
    );
  }
  // 001 §5.2: redirect_uri is exact-matched at /authorize and again at /token, so it is required
  // here even for a client with one registered URI (OAuth 2.1 would let it be omitted).
  const redirectUri = query.get('redirect_uri');
  if (!redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required.');
  if (!matchesRegisteredRedirect(redirectUri, client.redirect_uris)) {
    throw new OAuthError(
      'invalid_request',
      'The redirect_uri is not one this application registered, so the sign-in cannot continue.',
    );
  }
  // Registrations made before the policy tightened (an OS handler scheme) are not honoured.
  if (redirectUriProblem(redirectUri)) {
    throw new OAuthError(
      'invalid_request',
      'The redirect_uri is one this server no longer sends people to, so the sign-in cannot ' +
        'continue.',
    );
  }
  return { client, redirectUri };
}

/** The checks whose failures are reported to the client (RFC 6749 §4.1.2.1). */
function checkRequest(query: URLSearchParams, origin: string, client: OAuthClient) {
  if (query.get('response_type') !== 'code') {
    throw new OAuthError('unsupported_response_type', 'response_type must be code.');
  }
  const challenge = query.get('code_challenge');
  const method = query.get('code_challenge_method');
  if (!challenge) throw new OAuthError('invalid_request', 'code_challenge is required (PKCE).');
  if (method !== 'S256') {
    throw new OAuthError(
      'invalid_request',
      'code_challenge_method must be S256 (plain is refused).',
    );
  }
  if (!isWellFormedChallenge(challenge)) {
    throw new OAuthError('invalid_request', 'code_challenge must be 43 base64url characters.');
  }
  const state = query.get('state');
  if (state && state.length > MAX_STATE_LENGTH) {
    throw new OAuthError('invalid_request', `state is longer than ${MAX_STATE_LENGTH} characters.`);
  }
  // RFC 8707 §2: every resource named must be this server; none means this server.
  const resources = query.getAll('resource');
  if (resources.some((resource) => !namesThisResource(resource, origin))) {
    throw new OAuthError('invalid_target', `resource must name this server (${origin}).`);
  }
  if (!client.response_types.includes('code')) {
    throw new OAuthError('unauthorized_client', 'This client did not register response_type code.');
  }
  return { challenge, state };
}

export function handleAuthorize(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const origin = c.get('origin');
    const accept = c.req.header('accept');
    const query = new URL(c.req.url).searchParams;
    let resolved: { client: OAuthClient; redirectUri: string };
    try {
      resolved = await resolveClientAndRedirect(context, query);
    } catch (error) {
      if (error instanceof OAuthError) return renderErrorPage(error, accept);
      if (error instanceof StoreUnavailableError)
        return renderErrorPage(storeUnavailable(error), accept);
      throw error;
    }
    const { client, redirectUri } = resolved;
    const state = query.get('state');
    try {
      const checked = checkRequest(query, origin, client);
      const id = generateSecret(32);
      await context.db.query(
        `insert into private.oauth_authorization_requests
           (id, client_id, issuer, redirect_uri, state, code_challenge, scope, resource, expires_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
        [
          id,
          client.client_id,
          origin,
          redirectUri,
          checked.state,
          checked.challenge,
          DASHBOARD_SCOPE,
          origin,
          context.config.authorizationRequestTtlSeconds,
        ],
      );
      const consent = new URL('/mcp/consent', context.config.dashboardUrl);
      consent.searchParams.set('rid', id);
      return new Response(null, {
        status: 302,
        headers: { location: consent.toString(), 'cache-control': 'no-store' },
      });
    } catch (error) {
      if (error instanceof StoreUnavailableError)
        return renderErrorPage(storeUnavailable(error), accept);
      if (!(error instanceof OAuthError)) throw error;
      const location = buildRedirectUrl(redirectUri, {
        error: error.code,
        error_description: error.message,
        state,
        iss: origin,
      });
      return new Response(null, {
        status: 302,
        headers: { location, 'cache-control': 'no-store' },
      });
    }
  };
}
