// The authorization-code flow driven strictly by oauth4webapi (RFC 8414 discovery with the issuer
// check, RFC 7591 registration, PKCE S256, RFC 9207 iss validation, token and refresh responses),
// and every negative case: wrong verifier, replayed code, another client's code,
// redirect mismatch at authorize and at token, plain or missing PKCE, unknown client, wrong
// resource, refresh reuse, expired code.
import { randomUUID } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeUrl,
  DEMO,
  decide,
  mcpStatusFor,
  pkcePair,
  registerClient,
  signIn,
  startAuthorization,
  useOAuthStack,
} from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
const REDIRECT = 'http://127.0.0.1:7/callback';
const insecure = { [oauth.allowInsecureRequests]: true };

let memberSession = '';
beforeAll(async () => {
  memberSession = await signIn(stack(), DEMO.member);
});

async function discover(base = stack().mcpUrl): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(base);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

async function register(as: oauth.AuthorizationServer, metadata: Partial<oauth.Client> = {}) {
  const response = await oauth.dynamicClientRegistrationRequest(
    as,
    {
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      client_name: 'oauth4webapi',
      // Each call its own client (identical loopback registrations share one: docs/tool-server.md).
      software_id: randomUUID(),
      ...metadata,
    },
    insecure,
  );
  return oauth.processDynamicClientRegistrationResponse(response);
}

/** Authorize and approve; returns the callback parameters and the PKCE verifier. */
async function approvedCallback(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  options: { redirectUri?: string; session?: string; state?: string } = {},
) {
  const { verifier, challenge } = pkcePair();
  const url = new URL(as.authorization_endpoint as string);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', options.redirectUri ?? REDIRECT);
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', options.state ?? 'xyz');
  url.searchParams.set('resource', as.issuer);
  const rid = await startAuthorization(url.toString());
  const redirect = await decide(as.issuer, rid, options.session ?? memberSession, 'approve');
  return { callback: new URL(redirect), verifier };
}

async function exchange(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  callback: URL,
  verifier: string,
  redirectUri = REDIRECT,
) {
  const parameters = oauth.validateAuthResponse(as, client, callback, 'xyz');
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    parameters,
    redirectUri,
    verifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

/** The raw /token answer for a code, bypassing the client library's own checks. */
async function rawTokenRequest(
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${stack().mcpUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, string>,
  };
}

const mcpStatus = (token: string) => mcpStatusFor(stack().mcpUrl, token);

async function restStatus(token: string): Promise<number> {
  const response = await fetch(`${stack().apiUrl}/rest/v1/devices?select=uuid`, {
    headers: { authorization: `Bearer ${token}`, apikey: token },
  });
  await response.body?.cancel();
  return response.status;
}

describe('the strict flow', () => {
  it('discovers, registers, authorizes with iss, exchanges and refreshes, as oauth4webapi checks them', async () => {
    const as = await discover();
    expect(as.issuer).toBe(stack().mcpUrl);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    expect(callback.searchParams.get('iss')).toBe(stack().mcpUrl);
    const tokens = await exchange(as, client, callback, verifier);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.scope).toBe('dashboard');
    expect(tokens.expires_in).toBeGreaterThan(0);
    expect(await mcpStatus(tokens.access_token)).toBe(200);
    expect(await restStatus(tokens.access_token)).toBe(200);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.None(),
        tokens.refresh_token as string,
        insecure,
      ),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(await mcpStatus(refreshed.access_token)).toBe(200);
  });

  it('gives the legacy host its own issuer, consistent with the iss of its responses', async () => {
    const as = await discover(stack().mcpLegacyUrl);
    expect(as.issuer).toBe(stack().mcpLegacyUrl);
    expect(as.token_endpoint).toBe(`${stack().mcpLegacyUrl}/token`);
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    expect(callback.searchParams.get('iss')).toBe(stack().mcpLegacyUrl);
    const tokens = await exchange(as, client, callback, verifier);
    expect(await mcpStatusFor(stack().mcpLegacyUrl, tokens.access_token)).toBe(200);
  });

  it('makes oauth4webapi reject an authorization response whose iss was tampered with', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback } = await approvedCallback(as, client);
    callback.searchParams.set('iss', 'http://127.0.0.1:1');
    expect(() => oauth.validateAuthResponse(as, client, callback, 'xyz')).toThrow(/iss/);
  });

  it('binds the code to the account that pressed Allow', async () => {
    const as = await discover();
    const client = await register(as);
    const adminSession = await signIn(stack(), DEMO.admin);
    const { callback, verifier } = await approvedCallback(as, client, { session: adminSession });
    const tokens = await exchange(as, client, callback, verifier);
    const claims = JSON.parse(
      Buffer.from(tokens.access_token.split('.')[1] as string, 'base64url').toString(),
    );
    expect(claims.sub).toBe('a0000000-0000-4000-8000-000000000001');
    expect(claims.aud).toEqual([stack().mcpUrl, 'authenticated']);
    expect(claims.iss).toBe(stack().mcpUrl);
    expect(claims.role).toBe('authenticated');
    expect(claims.client_id).toBe(client.client_id);
  });
});

describe('refused at /token', () => {
  it('answers invalid_grant for a wrong verifier, and the code is spent', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const code = callback.searchParams.get('code') as string;
    const wrong = await rawTokenRequest({
      grant_type: 'authorization_code',
      code,
      code_verifier: pkcePair().verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    expect(wrong.headers.get('cache-control')).toBe('no-store');
    const right = await rawTokenRequest({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    });
    expect(right.body.error).toBe('invalid_grant');
  });

  it('refuses a replayed code and revokes the tokens its first exchange issued', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const fields = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    };
    const first = await rawTokenRequest(fields);
    expect(first.status).toBe(200);
    expect(await mcpStatus(first.body.access_token as string)).toBe(200);
    const replay = await rawTokenRequest(fields);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(await mcpStatus(first.body.access_token as string)).toBe(401);
    expect(await restStatus(first.body.access_token as string)).toBe(401);
    const refreshAfter = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: first.body.refresh_token as string,
      client_id: client.client_id,
    });
    expect(refreshAfter.body.error).toBe('invalid_grant');
  });

  it('issues exactly one token set when one code is exchanged 10 times at once', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const fields = {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    };
    const answers = await Promise.all(Array.from({ length: 10 }, () => rawTokenRequest(fields)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(answers.filter((answer) => answer.body.error === 'invalid_grant')).toHaveLength(9);
  });

  it("refuses another client's code", async () => {
    const as = await discover();
    const victim = await register(as);
    const attacker = await register(as);
    const { callback, verifier } = await approvedCallback(as, victim);
    const stolen = await rawTokenRequest({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: attacker.client_id,
    });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
  });

  it('refuses a redirect_uri that differs from the authorization request, even by the port', async () => {
    const as = await discover();
    const client = await register(as);
    for (const redirectUri of ['http://127.0.0.1:8/callback', 'http://127.0.0.1:7/callback/']) {
      const { callback, verifier } = await approvedCallback(as, client);
      const answer = await rawTokenRequest({
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') as string,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: client.client_id,
      });
      expect(answer.body.error).toBe('invalid_grant');
    }
  });

  it('refuses an expired code', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      // 61 s later (the code lives 60 s): moved in the store rather than waited for.
      await db.query(
        `update private.oauth_codes set expires_at = now() - interval '1 second'
          where used_at is null and expires_at > now()`,
      );
    } finally {
      await db.end();
    }
    const answer = await rawTokenRequest({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    });
    expect(answer.body).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringMatching(/expired/),
    });
  });

  it('refuses a resource other than the one authorized with invalid_target', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const answer = await rawTokenRequest({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
      resource: 'https://elsewhere.example',
    });
    expect(answer.body.error).toBe('invalid_target');
  });

  it('answers 400 invalid_client for a client that is not registered, so clients register again', async () => {
    const answer = await rawTokenRequest({
      grant_type: 'authorization_code',
      code: 'x',
      code_verifier: pkcePair().verifier,
      redirect_uri: REDIRECT,
      client_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_client');
  });

  it.each([
    [{ grant_type: 'password', username: 'a', password: 'b' }, 'unsupported_grant_type'],
    [{}, 'invalid_request'],
    [{ grant_type: 'authorization_code', code: 'x' }, 'invalid_request'],
    [
      {
        grant_type: 'authorization_code',
        code: 'x',
        code_verifier: 'short',
        redirect_uri: REDIRECT,
      },
      'invalid_request',
    ],
    [{ grant_type: 'refresh_token' }, 'invalid_request'],
  ])('answers %j with %s', async (fields, error) => {
    const client = await registerClient(stack().mcpUrl);
    const answer = await rawTokenRequest({ client_id: client.client_id, ...fields });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe(error);
  });

  it('refuses a JSON body and repeated parameters (RFC 6749 §3.2)', async () => {
    const client = await registerClient(stack().mcpUrl);
    const json = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: client.client_id,
      }),
    });
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: string }).error).toBe('invalid_request');
    const repeated = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=refresh_token&refresh_token=a&refresh_token=b&client_id=${client.client_id}`,
    });
    expect(((await repeated.json()) as { error: string }).error).toBe('invalid_request');
  });
});

describe('refresh tokens', () => {
  /** Moves a refresh token's rotation into the past, as if `seconds` had gone by. */
  async function ageRotation(seconds: number) {
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        `update private.oauth_refresh_tokens
            set rotated_at = rotated_at - make_interval(secs => $1) where rotated_at is not null`,
        [seconds],
      );
    } finally {
      await db.end();
    }
  }

  it('revokes the whole family when a rotated refresh token is presented again after the reuse interval', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const first = await exchange(as, client, callback, verifier);
    const second = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token as string,
      client_id: client.client_id,
    });
    expect(second.status).toBe(200);
    await ageRotation(11);
    const reuse = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token as string,
      client_id: client.client_id,
    });
    expect(reuse.body.error).toBe('invalid_grant');
    // The thief's copy and the legitimate successor both die with the family.
    const successor = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: second.body.refresh_token as string,
      client_id: client.client_id,
    });
    expect(successor.body.error).toBe('invalid_grant');
    expect(await mcpStatus(second.body.access_token as string)).toBe(401);
    expect(await mcpStatus(first.access_token)).toBe(401);
  });

  it('gives a client refreshing twice at once two working successors within the reuse interval', async () => {
    const as = await discover();
    const client = await register(as);
    const { callback, verifier } = await approvedCallback(as, client);
    const first = await exchange(as, client, callback, verifier);
    const fields = {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token as string,
      client_id: client.client_id,
    };
    const [a, b] = await Promise.all([rawTokenRequest(fields), rawTokenRequest(fields)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await mcpStatus(a.body.access_token as string)).toBe(200);
    expect(await mcpStatus(b.body.access_token as string)).toBe(200);
    // Retries inside the interval do not extend it: 11 s after the first rotation it is reuse.
    await ageRotation(11);
    expect((await rawTokenRequest(fields)).body.error).toBe('invalid_grant');
    expect(await mcpStatus(a.body.access_token as string)).toBe(401);
  });

  it("refuses another client's refresh token without revoking it", async () => {
    const as = await discover();
    const owner = await register(as);
    const other = await register(as);
    const { callback, verifier } = await approvedCallback(as, owner);
    const tokens = await exchange(as, owner, callback, verifier);
    const stolen = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token as string,
      client_id: other.client_id,
    });
    expect(stolen.body.error).toBe('invalid_grant');
    const legit = await rawTokenRequest({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token as string,
      client_id: owner.client_id,
    });
    expect(legit.status).toBe(200);
  });

  it('issues no refresh token to a client that did not register the refresh_token grant', async () => {
    const as = await discover();
    const client = await register(as, { grant_types: ['authorization_code'] });
    const { callback, verifier } = await approvedCallback(as, client);
    const tokens = await exchange(as, client, callback, verifier);
    expect(tokens.refresh_token).toBeUndefined();
  });
});

describe('confidential clients', () => {
  it('authenticate with client_secret_basic as registered, and not otherwise', async () => {
    const as = await discover();
    const client = await register(as, { token_endpoint_auth_method: 'client_secret_basic' });
    expect(client.client_secret).toEqual(expect.any(String));
    const { callback, verifier } = await approvedCallback(as, client);
    const parameters = oauth.validateAuthResponse(as, client, callback, 'xyz');
    const posted = await rawTokenRequest({
      grant_type: 'authorization_code',
      code: parameters.get('code') as string,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
      client_secret: client.client_secret as string,
    });
    expect(posted.status).toBe(401);
    expect(posted.body.error).toBe('invalid_client');

    const again = await approvedCallback(as, client);
    const wrongSecret = await rawTokenRequest(
      {
        grant_type: 'authorization_code',
        code: again.callback.searchParams.get('code') as string,
        code_verifier: again.verifier,
        redirect_uri: REDIRECT,
      },
      { authorization: `Basic ${Buffer.from(`${client.client_id}:nope`).toString('base64')}` },
    );
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.headers.get('www-authenticate')).toMatch(/^Basic/);

    const third = await approvedCallback(as, client);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(client.client_secret as string),
        oauth.validateAuthResponse(as, client, third.callback, 'xyz'),
        REDIRECT,
        third.verifier,
        insecure,
      ),
    );
    expect(await mcpStatus(tokens.access_token)).toBe(200);
  });

  it('authenticate with client_secret_post as registered', async () => {
    const as = await discover();
    const client = await register(as, { token_endpoint_auth_method: 'client_secret_post' });
    const { callback, verifier } = await approvedCallback(as, client);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretPost(client.client_secret as string),
        oauth.validateAuthResponse(as, client, callback, 'xyz'),
        REDIRECT,
        verifier,
        insecure,
      ),
    );
    expect(tokens.access_token).toEqual(expect.any(String));
  });
});

describe('refused at /authorize', () => {
  async function authorizeAnswer(parameters: Record<string, string>) {
    const response = await fetch(authorizeUrl(stack().mcpUrl, parameters), {
      redirect: 'manual',
      headers: { accept: 'text/html' },
    });
    return {
      status: response.status,
      location: response.headers.get('location'),
      text: await response.text(),
    };
  }

  it('shows an error page, never a redirect, for an unknown client', async () => {
    const answer = await authorizeAnswer({
      response_type: 'code',
      client_id: 'not-registered-client',
      redirect_uri: 'https://evil.example/cb',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.text).toMatch(/not registered/);
  });

  it('shows an error page, never a redirect, for an unregistered redirect URI', async () => {
    const client = await registerClient(stack().mcpUrl);
    for (const redirectUri of [
      'https://evil.example/callback',
      'http://localhost:7/callback',
      'http://127.0.0.1:7/other',
    ]) {
      const answer = await authorizeAnswer({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirectUri,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      });
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
    }
  });

  it.each([
    [{ code_challenge_method: 'plain' }, 'invalid_request'],
    [{ code_challenge_method: '' }, 'invalid_request'],
    [{ code_challenge: '' }, 'invalid_request'],
    [{ code_challenge: 'too-short' }, 'invalid_request'],
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ resource: 'https://elsewhere.example' }, 'invalid_target'],
    [{ resource: `${'http://127.0.0.1'}:1/` }, 'invalid_target'],
  ])('sends %j back to the client as %s, with state and iss', async (override, error) => {
    const client = await registerClient(stack().mcpUrl);
    const parameters: Record<string, string> = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      state: 'the-state',
      ...override,
    };
    for (const [name, value] of Object.entries(parameters))
      if (value === '') delete parameters[name];
    const answer = await authorizeAnswer(parameters);
    expect(answer.status).toBe(302);
    const location = new URL(answer.location as string);
    expect(location.origin + location.pathname).toBe('http://127.0.0.1:7/callback');
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('state')).toBe('the-state');
    expect(location.searchParams.get('iss')).toBe(stack().mcpUrl);
    expect(location.searchParams.get('code')).toBeNull();
  });

  it('accepts the resource with or without a trailing slash, and without one at all', async () => {
    const client = await registerClient(stack().mcpUrl);
    for (const resource of [stack().mcpUrl, `${stack().mcpUrl}/`, undefined]) {
      const rid = await startAuthorization(
        authorizeUrl(stack().mcpUrl, {
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
          ...(resource ? { resource } : {}),
        }),
      );
      expect(rid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });

  it('puts nothing but the request id in the consent URL', async () => {
    const client = await registerClient(stack().mcpUrl);
    const response = await fetch(
      authorizeUrl(stack().mcpUrl, {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        state: 'secret-state',
      }),
      { redirect: 'manual' },
    );
    const location = new URL(response.headers.get('location') as string);
    expect(location.origin).toBe(stack().dashboardUrl);
    expect(location.pathname).toBe('/mcp/consent');
    expect([...location.searchParams.keys()]).toEqual(['rid']);
  });
});
