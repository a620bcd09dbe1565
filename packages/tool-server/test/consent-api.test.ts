// The consent API the dashboard calls (001 §3, §5.2) and the grants and first-party exchange
// beside it: who may read and decide a request, that it is decided once and expires, that the
// decision cannot come from another origin, and what revoking a grant takes with it.
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeAndExchange,
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
let member = '';
let viewer = '';
beforeAll(async () => {
  [member, viewer] = await Promise.all([
    signIn(stack(), DEMO.member),
    signIn(stack(), DEMO.viewer),
  ]);
});

async function newRequest(state = 'st') {
  const client = await registerClient(stack().mcpUrl, { client_name: 'Claude Desktop' });
  const rid = await startAuthorization(
    authorizeUrl(stack().mcpUrl, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: 'http://127.0.0.1:5555/callback',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      state,
    }),
  );
  return { client, rid };
}

function details(rid: string, token?: string, origin?: string) {
  return fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}`, {
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(origin ? { origin } : {}),
    },
  });
}

function consent(rid: string, body: unknown, token?: string) {
  return fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}/consent`, {
    method: 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
}

const mcpStatus = (token: string) => mcpStatusFor(stack().mcpUrl, token);

describe('reading a request', () => {
  it('shows the client, where it returns, the scope and the signed-in account with its role', async () => {
    const { client, rid } = await newRequest();
    const response = await details(rid, viewer);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({
      authorization_id: rid,
      client: { client_id: client.client_id, name: 'Claude Desktop', uri: null, logo_uri: null },
      redirect_uri: 'http://127.0.0.1:5555/callback',
      redirect_host: '127.0.0.1:5555',
      scope: 'dashboard',
      scope_description: expect.stringMatching(/^Full dashboard access/),
      resource: stack().mcpUrl,
      user: {
        id: 'a0000000-0000-4000-8000-000000000003',
        email: 'viewer@demo.local',
        role: { slug: 'viewer', name: expect.any(String), is_admin: false },
      },
      expires_at: expect.any(String),
    });
  });

  it.each([
    ['no token', undefined],
    ['a malformed token', 'not-a-jwt'],
  ])('answers 401 invalid_token with %s', async (_, token) => {
    const { rid } = await newRequest();
    const response = await details(rid, token);
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_token');
  });

  it('refuses an OAuth access token: only a dashboard session may consent', async () => {
    const { access_token } = await authorizeAndExchange(stack());
    const { rid } = await newRequest();
    expect((await details(rid, access_token)).status).toBe(401);
    expect((await consent(rid, { action: 'approve' }, access_token)).status).toBe(401);
  });

  it('refuses a session that signed out, at once rather than at its exp', async () => {
    const session = await signIn(stack(), DEMO.member);
    const { rid } = await newRequest();
    expect((await details(rid, session)).status).toBe(200);
    const logout = await fetch(`${stack().apiUrl}/auth/v1/logout?scope=local`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session}`, apikey: stack().keys.publishableKey },
    });
    expect(logout.status).toBe(204);
    expect((await details(rid, session)).status).toBe(401);
  });

  it('answers 404 for an unknown or malformed request id', async () => {
    expect((await details('A'.repeat(43), member)).status).toBe(404);
    expect((await details('..%2F..%2Fetc', member)).status).toBe(404);
    expect((await details("x' or '1'='1", member)).status).toBe(404);
  });
});

describe('deciding a request', () => {
  it('approves once: the code goes to the registered redirect with state and iss', async () => {
    const { rid } = await newRequest('abc');
    const redirect = new URL(await decide(stack().mcpUrl, rid, member, 'approve'));
    expect(redirect.origin + redirect.pathname).toBe('http://127.0.0.1:5555/callback');
    expect(redirect.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(redirect.searchParams.get('state')).toBe('abc');
    expect(redirect.searchParams.get('iss')).toBe(stack().mcpUrl);
    const again = await consent(rid, { action: 'approve' }, member);
    expect(again.status).toBe(410);
    expect(((await again.json()) as { error: string }).error).toBe('already_decided');
    expect((await details(rid, member)).status).toBe(410);
  });

  it('denies with access_denied, state and iss, and issues no code', async () => {
    const { rid } = await newRequest('def');
    const redirect = new URL(await decide(stack().mcpUrl, rid, member, 'deny'));
    expect(redirect.searchParams.get('error')).toBe('access_denied');
    expect(redirect.searchParams.get('state')).toBe('def');
    expect(redirect.searchParams.get('iss')).toBe(stack().mcpUrl);
    expect(redirect.searchParams.get('code')).toBeNull();
    expect((await consent(rid, { action: 'approve' }, member)).status).toBe(410);
  });

  it('lets exactly one of two simultaneous decisions through', async () => {
    const { rid } = await newRequest();
    const answers = await Promise.all([
      consent(rid, { action: 'approve' }, member),
      consent(rid, { action: 'deny' }, member),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 410]);
  });

  it('refuses an expired request with 410 expired', async () => {
    const { rid } = await newRequest();
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        "update private.oauth_authorization_requests set expires_at = now() - interval '1 second' where id = $1",
        [rid],
      );
    } finally {
      await db.end();
    }
    const response = await consent(rid, { action: 'approve' }, member);
    expect(response.status).toBe(410);
    expect(((await response.json()) as { error: string }).error).toBe('expired');
  });

  it.each([[{}], [{ action: 'allow' }], [{ action: ['approve'] }], ['approve']])(
    'refuses the body %j with 400 invalid_request',
    async (body) => {
      const { rid } = await newRequest();
      const response = await consent(rid, body, member);
      expect(response.status).toBe(400);
      // Still pending: a bad body decides nothing.
      expect((await details(rid, member)).status).toBe(200);
    },
  );

  it('answers cross-origin reads and preflights only for the dashboard origin', async () => {
    const { rid } = await newRequest();
    const evil = await fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}/consent`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const dashboard = await fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}/consent`, {
      method: 'OPTIONS',
      headers: {
        origin: stack().dashboardUrl,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(dashboard.headers.get('access-control-allow-origin')).toBe(stack().dashboardUrl);
    expect(dashboard.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    const read = await details(rid, member, 'https://evil.example');
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('cannot be decided by a cross-site form post, which carries no bearer token', async () => {
    const { rid } = await newRequest();
    const forged = await fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}/consent`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'https://evil.example',
      },
      body: 'action=approve',
    });
    expect(forged.status).toBe(401);
    expect((await details(rid, member)).status).toBe(200);
  });
});

describe('grants', () => {
  async function grants(token: string) {
    const response = await fetch(`${stack().mcpUrl}/oauth/grants`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return (await response.json()) as Array<{ id: string; client: { client_id: string } }>;
  }

  it("lists the account's grants and revoking one revokes its tokens", async () => {
    const session = await signIn(stack(), DEMO.admin);
    const issued = await authorizeAndExchange(stack(), DEMO.admin);
    const listed = await grants(session);
    expect(listed.map((grant) => grant.client.client_id)).toContain(issued.client.client_id);
    expect(await mcpStatus(issued.access_token)).toBe(200);
    const revoke = await fetch(
      `${stack().mcpUrl}/oauth/grants?client_id=${encodeURIComponent(issued.client.client_id)}`,
      { method: 'DELETE', headers: { authorization: `Bearer ${session}` } },
    );
    expect(revoke.status).toBe(204);
    expect(await mcpStatus(issued.access_token)).toBe(401);
    const rest = await fetch(`${stack().apiUrl}/rest/v1/devices?select=uuid`, {
      headers: { authorization: `Bearer ${issued.access_token}`, apikey: issued.access_token },
    });
    expect(rest.status).toBe(401);
    const refresh = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: issued.refresh_token,
        client_id: issued.client.client_id,
      }),
    });
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_grant');
    expect((await grants(session)).map((grant) => grant.client.client_id)).not.toContain(
      issued.client.client_id,
    );
  });

  it("cannot see or revoke another account's grant", async () => {
    const issued = await authorizeAndExchange(stack(), DEMO.member);
    const memberGrant = (await grants(member)).find(
      (grant) => grant.client.client_id === issued.client.client_id,
    );
    expect(memberGrant).toBeDefined();
    expect((await grants(viewer)).map((grant) => grant.id)).not.toContain(memberGrant?.id);
    const revoke = await fetch(`${stack().mcpUrl}/oauth/grants/${memberGrant?.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect(revoke.status).toBe(404);
    expect(await mcpStatus(issued.access_token)).toBe(200);
  });
});

describe('the first-party exchange', () => {
  it('turns a live dashboard session into an OAuth-type token accepted by the tool server and REST', async () => {
    const response = await fetch(`${stack().mcpUrl}/first-party-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${member}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as {
      access_token: string;
      token_type: string;
      scope: string;
    };
    expect(body.token_type).toBe('Bearer');
    expect(await mcpStatus(body.access_token)).toBe(200);
    const claims = JSON.parse(
      Buffer.from(body.access_token.split('.')[1] as string, 'base64url').toString(),
    );
    expect(claims).toMatchObject({
      sub: 'a0000000-0000-4000-8000-000000000002',
      role: 'authenticated',
      aud: [stack().mcpUrl, 'authenticated'],
      iss: stack().mcpUrl,
      client_id: 'dashboard',
    });
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      const { rows } = await db.query('select label from public.api_tokens where jti = $1', [
        claims.jti,
      ]);
      expect(rows).toEqual([{ label: 'oauth' }]);
    } finally {
      await db.end();
    }
  });

  it('refuses anything but a live dashboard session', async () => {
    const { access_token } = await authorizeAndExchange(stack());
    for (const token of [access_token, stack().keys.serviceRoleKey, stack().keys.anonKey, 'x']) {
      const response = await fetch(`${stack().mcpUrl}/first-party-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(401);
    }
  });

  it('refuses the session on the MCP endpoint itself: it is not a token for this resource', async () => {
    expect(await mcpStatus(member)).toBe(401);
  });
});
