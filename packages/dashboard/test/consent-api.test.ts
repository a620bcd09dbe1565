// The consent API client with a scripted fetch: what it sends (bearer only, no cookies), how the
// tool server's answers map onto the closed error set, and what it refuses to follow.
import { describe, expect, it } from 'vitest';
import {
  type AuthorizationDetails,
  ConsentApiError,
  decideAuthorization,
  fetchAuthorization,
} from '../src/consent-api.ts';

const RID = 'rid_0123456789abcdef';
const DETAILS: AuthorizationDetails = {
  authorization_id: RID,
  client: { client_id: 'client-1', name: 'Claude', uri: null, logo_uri: null },
  redirect_uri: 'https://app.example.com/callback',
  redirect_host: 'app.example.com',
  scope: 'dashboard',
  scope_description: 'Full dashboard access',
  resource: 'https://mcp.example.com/',
  user: {
    id: 'u1',
    email: 'user@demo.local',
    role: { slug: 'member', name: 'Member', is_admin: false },
  },
  expires_at: '2026-01-01T00:00:00Z',
};

type Call = { url: string; init: RequestInit };

function scriptedFetch(status: number, body: unknown, calls: Call[] = []): typeof fetch {
  return (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return new Response(text, { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
}

const base = { mcpUrl: 'https://mcp.example.com/', rid: RID, accessToken: 'token-123' };

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ConsentApiError) return error.code;
    throw error;
  }
  return 'resolved';
}

describe('fetchAuthorization', () => {
  it('sends the bearer token and no cookies to /oauth/authorizations/<rid>', async () => {
    const calls: Call[] = [];
    const details = await fetchAuthorization({
      ...base,
      fetch: scriptedFetch(200, DETAILS, calls),
    });
    expect(details).toEqual(DETAILS);
    const [call] = calls;
    expect(call?.url).toBe(`https://mcp.example.com/oauth/authorizations/${RID}`);
    expect(call?.init).toMatchObject({
      method: 'GET',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      headers: { Authorization: 'Bearer token-123' },
    });
  });

  it.each([
    [401, { error: 'invalid_token', error_description: 'x' }, 'invalid_token'],
    [404, { error: 'not_found', error_description: 'x' }, 'not_found'],
    [410, { error: 'expired', error_description: 'x' }, 'expired'],
    [410, { error: 'already_decided', error_description: 'x' }, 'already_decided'],
    [410, 'not json', 'expired'],
    [503, { error: 'temporarily_unavailable', error_description: 'x' }, 'unavailable'],
    [500, { error: 'server_error', error_description: 'x' }, 'server_error'],
    [400, { error: 'invalid_request', error_description: 'x' }, 'server_error'],
    [200, { ...DETAILS, client: null }, 'server_error'],
    [200, { ...DETAILS, user: { ...DETAILS.user, role: { slug: 'x' } } }, 'server_error'],
    [200, 'not json', 'server_error'],
  ])('maps HTTP %i %j to %s', async (status, body, code) => {
    expect(await codeOf(fetchAuthorization({ ...base, fetch: scriptedFetch(status, body) }))).toBe(
      code,
    );
  });

  it('maps a network failure to unavailable', async () => {
    const failing = (async () => {
      throw new TypeError('Failed to fetch');
    }) as typeof fetch;
    expect(await codeOf(fetchAuthorization({ ...base, fetch: failing }))).toBe('unavailable');
  });

  it('accepts a user without a role or email', async () => {
    const body = { ...DETAILS, user: { id: 'u2', email: null, role: null } };
    const details = await fetchAuthorization({ ...base, fetch: scriptedFetch(200, body) });
    expect(details.user.role).toBeNull();
  });
});

describe('decideAuthorization', () => {
  it.each(['approve', 'deny'] as const)(
    'posts {"action":"%s"} as JSON with the bearer token',
    async (action) => {
      const calls: Call[] = [];
      const redirect = 'https://app.example.com/callback?code=c&state=s';
      const result = await decideAuthorization({
        ...base,
        action,
        fetch: scriptedFetch(200, { redirect_url: redirect }, calls),
      });
      expect(result.redirect_url).toBe(redirect);
      const [call] = calls;
      expect(call?.url).toBe(`https://mcp.example.com/oauth/authorizations/${RID}/consent`);
      expect(call?.init).toMatchObject({
        method: 'POST',
        body: JSON.stringify({ action }),
        credentials: 'omit',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer token-123' },
      });
    },
  );

  it.each([
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    ' javascript:alert(1)',
    'data:text/html,hi',
    'file:///etc/passwd',
    'blob:https://app.example.com/x',
    'vbscript:x',
    '//evil.com/',
    '/relative',
    'http://',
    '',
    42,
    null,
  ])('refuses to follow the redirect_url %j', async (redirectUrl) => {
    const fetch = scriptedFetch(200, { redirect_url: redirectUrl });
    expect(await codeOf(decideAuthorization({ ...base, action: 'approve', fetch }))).toBe(
      'server_error',
    );
  });

  it.each([
    'cursor://anysphere.cursor-retrieval/oauth/callback?code=c',
    'com.example.app:/callback?code=c',
  ])('follows the private-use scheme redirect %s of a native client', async (redirectUrl) => {
    const fetch = scriptedFetch(200, { redirect_url: redirectUrl });
    const result = await decideAuthorization({ ...base, action: 'approve', fetch });
    expect(result.redirect_url).toBe(redirectUrl);
  });

  it('follows a loopback http redirect of a CLI client', async () => {
    const fetch = scriptedFetch(200, { redirect_url: 'http://127.0.0.1:8976/cb?code=c' });
    const result = await decideAuthorization({ ...base, action: 'approve', fetch });
    expect(result.redirect_url).toBe('http://127.0.0.1:8976/cb?code=c');
  });

  it('reports a decided request as already_decided', async () => {
    const fetch = scriptedFetch(410, { error: 'already_decided', error_description: 'x' });
    expect(await codeOf(decideAuthorization({ ...base, action: 'deny', fetch }))).toBe(
      'already_decided',
    );
  });
});
