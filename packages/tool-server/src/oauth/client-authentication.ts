// Client authentication at /token and /revoke (RFC 6749 §2.3, RFC 7591 token_endpoint_auth_method):
// a client authenticates the way it registered, and only that way. An unregistered client_id is
// 400 invalid_client (001 §7: re-run registration); a registered client with wrong or missing
// credentials is 401 invalid_client (RFC 6749 §5.2), with a Basic challenge when it used Basic.
import type { ClientResolver } from './client-resolver.ts';
import type { OAuthClient } from './clients.ts';
import { OAuthError } from './oauth-error.ts';
import { matchesHash } from './secrets.ts';

interface PresentedCredentials {
  clientId: string;
  secret: string | undefined;
  via: 'basic' | 'post' | 'none';
}

function decodeBasic(header: string): { id: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before joining.
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    return undefined;
  }
}

function presentedCredentials(
  authorization: string | undefined,
  form: URLSearchParams,
): PresentedCredentials {
  const bodyId = form.get('client_id') ?? undefined;
  const bodySecret = form.get('client_secret') ?? undefined;
  if (authorization && /^Basic\s/i.test(authorization)) {
    const basic = decodeBasic(authorization);
    if (!basic) {
      throw new OAuthError('invalid_client', 'The Basic credentials are malformed.', {
        status: 401,
        headers: { 'www-authenticate': 'Basic realm="oauth"' },
      });
    }
    if (bodySecret !== undefined || (bodyId !== undefined && bodyId !== basic.id)) {
      throw new OAuthError('invalid_request', 'Use one client authentication method, not two.');
    }
    return { clientId: basic.id, secret: basic.secret, via: 'basic' };
  }
  if (!bodyId) throw new OAuthError('invalid_request', 'client_id is required.');
  return { clientId: bodyId, secret: bodySecret, via: bodySecret === undefined ? 'none' : 'post' };
}

export async function authenticateClient(
  clients: ClientResolver,
  authorization: string | undefined,
  form: URLSearchParams,
): Promise<OAuthClient> {
  const presented = presentedCredentials(authorization, form);
  const client = await clients.resolve(presented.clientId);
  if (!client || client.source === 'first_party') {
    throw new OAuthError(
      'invalid_client',
      'This client_id is not registered here; register again (POST /register).',
    );
  }
  const expected = client.token_endpoint_auth_method;
  const challenge =
    presented.via === 'basic' ? { 'www-authenticate': 'Basic realm="oauth"' } : undefined;
  const fail = (description: string) =>
    new OAuthError('invalid_client', description, { status: 401, headers: challenge });
  if (expected === 'none') {
    if (presented.via !== 'none') throw fail('This client is public and must not send a secret.');
    return client;
  }
  const wantedVia = expected === 'client_secret_basic' ? 'basic' : 'post';
  if (presented.via !== wantedVia) {
    throw fail(`This client authenticates with ${expected}.`);
  }
  if (
    !presented.secret ||
    !client.client_secret_hash ||
    !matchesHash(presented.secret, client.client_secret_hash)
  ) {
    throw fail('The client credentials are wrong.');
  }
  return client;
}
