// The official MCP SDK clients run the whole authorization headless against the stack, on both
// origins: 401 → RFC 9728 resource metadata → RFC 8414 server metadata → RFC 7591 registration →
// PKCE authorize → consent API approval by a signed-in member → token (v2 checks RFC 9207 iss) →
// an authenticated reconnect (initialize, tools/list). v1 is @modelcontextprotocol/sdk 1.32.2,
// v2 is @modelcontextprotocol/client 2.4.0, in its default legacy era and in `mode: 'auto'`.
// Also: refresh after a revoked access token, confidential registration by default, tokens bound
// to the host that issued them, and a code whose request named no redirect_uri.
import { decodeJwt } from 'jose';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { HeadlessOAuthProvider } from './helpers/headless-provider.ts';
import {
  authorizeUrl,
  DEMO,
  decide,
  pkcePair,
  postToMcp,
  registerClient,
  signIn,
  startAuthorization,
  useOAuthStack,
} from './helpers/oauth-stack.ts';
import { inOrder, runV1Flow, runV2Flow } from './helpers/sdk-flows.ts';

const stack = useOAuthStack();

type Origin = 'mcpUrl' | 'mcpLegacyUrl';
const ORIGINS: Origin[] = ['mcpUrl', 'mcpLegacyUrl'];

async function queryDb<Row>(text: string, values: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: stack().dbUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end();
  }
}

/**
 * What the server must have recorded and issued for one SDK flow at `base`: the registration
 * holds the redirect the client used, the authorization request carried PKCE S256, the resource
 * and that redirect, the callback carries code, the client's state and iss = the host called,
 * and the access token is for this resource, from this issuer, for the member, to this client.
 */
async function expectFlowBoundTo<ClientInformation, Tokens, DiscoveryState>(
  base: string,
  provider: HeadlessOAuthProvider<ClientInformation, Tokens, DiscoveryState>,
  clientId: string,
  accessToken: string,
) {
  expect(provider.authorizationUrls).toHaveLength(1);
  const authorization = provider.authorizationUrls[0] as URL;
  expect(authorization.origin + authorization.pathname).toBe(`${base}/authorize`);
  expect(authorization.searchParams.get('client_id')).toBe(clientId);
  expect(authorization.searchParams.get('response_type')).toBe('code');
  expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorization.searchParams.get('redirect_uri')).toBe(provider.redirectUrl);
  expect(authorization.searchParams.get('resource')).toBe(base);
  expect(authorization.searchParams.get('state')).toBe(provider.states.at(-1));

  const callback = provider.callbackUrl as URL;
  expect(callback.origin + callback.pathname).toBe(provider.redirectUrl);
  expect(callback.searchParams.get('iss')).toBe(base);
  expect(callback.searchParams.get('state')).toBe(authorization.searchParams.get('state'));
  expect(callback.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{20,}$/);

  const [registered] = await queryDb<{ redirect_uris: string[]; source: string }>(
    'select redirect_uris, source from private.oauth_clients where client_id = $1',
    [clientId],
  );
  expect(registered).toEqual({ redirect_uris: [provider.redirectUrl], source: 'registration' });
  const requests = await queryDb<{ redirect_uri: string; issuer: string; resource: string }>(
    `select redirect_uri, issuer, resource from private.oauth_authorization_requests
      where client_id = $1`,
    [clientId],
  );
  expect(requests).toEqual([{ redirect_uri: provider.redirectUrl, issuer: base, resource: base }]);

  const [member] = await queryDb<{ id: string }>('select id from auth.users where email = $1', [
    DEMO.member.email,
  ]);
  const claims = decodeJwt(accessToken);
  expect(claims.iss).toBe(base);
  expect(claims.aud).toEqual(expect.arrayContaining([base]));
  expect(claims.sub).toBe(member?.id);
  expect(claims.client_id).toBe(clientId);
}

/** The registration the server stored: how the client authenticates, and whether it has a secret. */
async function storedAuthMethod(clientId: string) {
  const [row] = await queryDb<{ token_endpoint_auth_method: string; has_secret: boolean }>(
    `select token_endpoint_auth_method, client_secret_hash is not null as has_secret
       from private.oauth_clients where client_id = $1`,
    [clientId],
  );
  return row;
}

describe('the v1 SDK client (@modelcontextprotocol/sdk)', () => {
  it.each(ORIGINS)(
    'authorizes from a 401 alone, then initializes and lists tools on %s',
    async (origin) => {
      const base = stack()[origin];
      const { provider, client, clientId, accessToken } = await runV1Flow(stack(), base);
      try {
        expect(client.getServerVersion()?.name).toBe('capture-platform');
        const { tools } = await client.listTools();
        expect(Array.isArray(tools)).toBe(true);
      } finally {
        await client.close();
      }
      await expectFlowBoundTo(base, provider, clientId, accessToken);
      expect(await storedAuthMethod(clientId)).toEqual({
        token_endpoint_auth_method: 'none',
        has_secret: false,
      });
    },
  );

  it('registers as client_secret_basic when it names no auth method, and authenticates with the secret', async () => {
    const base = stack().mcpUrl;
    const { provider, client, clientId, accessToken } = await runV1Flow(stack(), base, {
      omitAuthMethod: true,
    });
    try {
      expect(client.getServerVersion()?.name).toBe('capture-platform');
    } finally {
      await client.close();
    }
    expect(provider.clientInformation()?.client_secret).toBeTruthy();
    expect(await storedAuthMethod(clientId)).toEqual({
      token_endpoint_auth_method: 'client_secret_basic',
      has_secret: true,
    });
    await expectFlowBoundTo(base, provider, clientId, accessToken);
  });
});

describe('the v2 SDK client (@modelcontextprotocol/client)', () => {
  it.each(ORIGINS)(
    'authorizes from a 401 alone, checks iss, then initializes and lists tools on %s',
    async (origin) => {
      const base = stack()[origin];
      const { provider, client, clientId, accessToken } = await runV2Flow(stack(), base, 'legacy');
      try {
        expect(client.getProtocolEra()).toBe('legacy');
        expect(client.getServerVersion()?.name).toBe('capture-platform');
        const { tools } = await client.listTools();
        expect(Array.isArray(tools)).toBe(true);
      } finally {
        await client.close();
      }
      await expectFlowBoundTo(base, provider, clientId, accessToken);
    },
  );

  it.each(ORIGINS)(
    'negotiates the modern era with versionNegotiation auto after authorizing on %s',
    async (origin) => {
      const base = stack()[origin];
      const { provider, client, clientId, accessToken } = await runV2Flow(stack(), base, 'auto');
      try {
        expect(client.getProtocolEra()).toBe('modern');
        expect(client.getServerVersion()?.name).toBe('capture-platform');
        const { tools } = await client.listTools();
        expect(Array.isArray(tools)).toBe(true);
      } finally {
        await client.close();
      }
      await expectFlowBoundTo(base, provider, clientId, accessToken);
    },
  );

  it('registers as client_secret_basic when it names no auth method, and authenticates with the secret', async () => {
    const base = stack().mcpLegacyUrl;
    const { provider, client, clientId, accessToken } = await runV2Flow(stack(), base, 'legacy', {
      omitAuthMethod: true,
    });
    try {
      expect(client.getServerVersion()?.name).toBe('capture-platform');
    } finally {
      await client.close();
    }
    expect(provider.clientInformation()?.client_secret).toBeTruthy();
    expect(await storedAuthMethod(clientId)).toEqual({
      token_endpoint_auth_method: 'client_secret_basic',
      has_secret: true,
    });
    await expectFlowBoundTo(base, provider, clientId, accessToken);
  });

  it('renews a revoked access token with its refresh token on the next 401, without a new consent', async () => {
    const base = stack().mcpUrl;
    const { provider, client, log, clientId, accessToken } = await runV2Flow(
      stack(),
      base,
      'legacy',
    );
    try {
      const revocation = await fetch(`${base}/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          token: accessToken,
          token_type_hint: 'access_token',
          client_id: clientId,
        }),
      });
      expect(revocation.status).toBe(200);
      log.length = 0;

      const { tools } = await client.listTools();
      expect(Array.isArray(tools)).toBe(true);
      expect(inOrder(log, ['POST / 401', 'POST /token 200', 'POST / 200'])).toBe(true);
      const renewed = provider.tokens()?.access_token ?? '';
      expect(renewed).not.toBe(accessToken);
      expect(decodeJwt(renewed).iss).toBe(base);
      expect(provider.authorizationUrls).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});

describe('tokens are per host', () => {
  const initializeWith = postToMcp;

  it("refuses the legacy origin's token at the canonical origin with a challenge naming the canonical metadata", async () => {
    const { mcpUrl, mcpLegacyUrl } = stack();
    const { client, accessToken: token } = await runV2Flow(stack(), mcpLegacyUrl, 'legacy');
    await client.close();
    expect(decodeJwt(token).aud).not.toContain(mcpUrl);

    expect((await initializeWith(mcpLegacyUrl, token)).status).toBe(200);
    const refused = await initializeWith(mcpUrl, token);
    expect(refused.status).toBe(401);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain(
      `resource_metadata="${mcpUrl}/.well-known/oauth-protected-resource"`,
    );
    expect(challenge).toContain('error="invalid_token"');
  });

  /** Authorizes `clientId` at `base` and approves as the member; returns code and verifier. */
  async function approvedCode(base: string, clientId: string, session: string) {
    const { verifier, challenge } = pkcePair();
    const rid = await startAuthorization(
      authorizeUrl(base, {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:9/callback',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: base,
      }),
    );
    const callback = new URL(await decide(stack().mcpUrl, rid, session, 'approve'));
    return { code: callback.searchParams.get('code') ?? '', verifier };
  }

  async function token(base: string, form: Record<string, string>) {
    const response = await fetch(`${base}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  // Regression: the grant is one row per (user, client) and its `resource` is overwritten by the
  // latest approval, while codes and refresh tokens read the resource from the grant. A client_id
  // used on both hosts (a metadata-document URL, or one registration reused) then gets tokens
  // whose aud names the other host, which the issuing host refuses.
  it('keeps issuing tokens for the host called after the same client is also approved on the other origin', async () => {
    const { mcpUrl, mcpLegacyUrl } = stack();
    const client = await registerClient(mcpUrl, { redirect_uris: ['http://127.0.0.1/callback'] });
    const session = await signIn(stack(), DEMO.member);
    const canonical = await approvedCode(mcpUrl, client.client_id, session);
    const legacy = await approvedCode(mcpLegacyUrl, client.client_id, session);

    const exchanged = await token(mcpUrl, {
      grant_type: 'authorization_code',
      code: canonical.code,
      code_verifier: canonical.verifier,
      redirect_uri: 'http://127.0.0.1:9/callback',
      client_id: client.client_id,
    });
    expect(exchanged.status).toBe(200);
    const legacyExchanged = await token(mcpLegacyUrl, {
      grant_type: 'authorization_code',
      code: legacy.code,
      code_verifier: legacy.verifier,
      redirect_uri: 'http://127.0.0.1:9/callback',
      client_id: client.client_id,
    });
    expect(legacyExchanged.status).toBe(200);
    const refreshed = await token(mcpUrl, {
      grant_type: 'refresh_token',
      refresh_token: exchanged.body.refresh_token ?? '',
      client_id: client.client_id,
    });
    expect(refreshed.status).toBe(200);

    for (const [base, issued] of [
      [mcpUrl, exchanged.body.access_token],
      [mcpLegacyUrl, legacyExchanged.body.access_token],
      [mcpUrl, refreshed.body.access_token],
    ] as const) {
      const claims = decodeJwt(issued ?? '');
      const accepted = (await initializeWith(base, issued ?? '')).status;
      expect({ iss: claims.iss, aud: claims.aud, accepted }).toEqual({
        iss: base,
        aud: [base, 'authenticated'],
        accepted: 200,
      });
    }
  });
});

// Regression: /authorize once fell back to a client's single registered redirect while /token
// insisted on redirect_uri, so such a code could never be redeemed.
describe('a client that omits redirect_uri at /authorize', () => {
  it('refuses an authorization request without redirect_uri, which /token would need again', async () => {
    const base = stack().mcpUrl;
    const client = await registerClient(base, { redirect_uris: ['https://app.example.com/cb'] });
    const response = await fetch(
      authorizeUrl(base, {
        response_type: 'code',
        client_id: client.client_id,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        state: 'no-redirect-uri',
      }),
      { redirect: 'manual' },
    );
    // 001 §5.2: exact-matched at both ends; shown, never redirected to a URI nobody asked for.
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
  });
});
