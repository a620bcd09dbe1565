// Discovery (RFC 8414, RFC 9728, the variants clients fall back to), the host allowlist (DNS
// rebinding), the 401 challenge and its CORS, the Origin check of the MCP endpoint, and dynamic
// client registration (RFC 7591) with the redirect-URI policy as real clients exercise it.
import { describe, expect, it } from 'vitest';
import { registerClient, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();

function register(body: unknown, contentType = 'application/json') {
  return fetch(`${stack().mcpUrl}/register`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('the local stack', () => {
  it('names the tool server and the dashboard in its status variables', () => {
    expect(stack().status()).toMatchObject({
      MCP_URL: stack().mcpUrl,
      MCP_LEGACY_URL: stack().mcpLegacyUrl,
      DASHBOARD_URL: stack().dashboardUrl,
    });
    expect(new URL(stack().mcpLegacyUrl).hostname).toBe('localhost');
    expect(new URL(stack().mcpUrl).hostname).toBe('127.0.0.1');
  });
});

describe('discovery', () => {
  it.each([
    '/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/mcp',
    '/.well-known/openid-configuration',
  ])(
    'serves the authorization-server metadata at %s, issuer and endpoints from the host called',
    async (path) => {
      for (const base of [stack().mcpUrl, stack().mcpLegacyUrl]) {
        const response = await fetch(`${base}${path}`);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toMatch(/application\/json/);
        expect(response.headers.get('access-control-allow-origin')).toBe('*');
        expect(await response.json()).toMatchObject({
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          registration_endpoint: `${base}/register`,
          code_challenge_methods_supported: ['S256'],
          authorization_response_iss_parameter_supported: true,
          response_types_supported: ['code'],
        });
      }
    },
  );

  it('serves protected-resource metadata naming the same host as resource and authorization server', async () => {
    for (const base of [stack().mcpUrl, stack().mcpLegacyUrl]) {
      const response = await fetch(`${base}/.well-known/oauth-protected-resource`);
      expect(await response.json()).toMatchObject({
        resource: base,
        authorization_servers: [base],
      });
    }
  });

  it.each([
    'evil.example',
    `evil.example:${new URL('http://127.0.0.1').port || 80}`,
    '127.0.0.1.nip.io',
  ])('refuses Host %s on every route (DNS rebinding)', async (host) => {
    const { request } = await import('node:http');
    const port = Number(new URL(stack().mcpUrl).port);
    for (const path of ['/.well-known/oauth-authorization-server', '/', '/register']) {
      const status = await new Promise<number>((resolve, reject) => {
        const outgoing = request(
          { host: '127.0.0.1', port, path, method: 'GET', headers: { host } },
          (answer) => {
            answer.resume();
            resolve(answer.statusCode ?? 0);
          },
        );
        outgoing.on('error', reject);
        outgoing.end();
      });
      expect(status).toBe(421);
    }
  });

  it('refuses the legacy port reached by another name: each origin is exactly one host', async () => {
    const port = new URL(stack().mcpLegacyUrl).port;
    const response = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(421);
  });
});

describe('the MCP endpoint without a valid token', () => {
  it('answers 401 with one Bearer challenge naming the resource metadata of the host called, exposed to browsers', async () => {
    for (const base of [stack().mcpUrl, stack().mcpLegacyUrl]) {
      const response = await fetch(`${base}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).toBe(401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge).toBe(
        `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource", scope="dashboard"`,
      );
      expect(response.headers.get('access-control-expose-headers')).toMatch(/www-authenticate/);
    }
  });

  it.each([
    ['an unsigned token', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'],
    ['garbage', 'abc'],
  ])('answers 401 invalid_token for %s', async (_, token) => {
    const response = await fetch(`${stack().mcpUrl}/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('answers a preflight from an origin it serves without asking for a token', async () => {
    const response = await fetch(`${stack().mcpUrl}/`, {
      method: 'OPTIONS',
      headers: {
        origin: stack().dashboardUrl,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(stack().dashboardUrl);
    expect(response.headers.get('access-control-allow-headers')).toMatch(/mcp-protocol-version/);
  });

  it('allows no foreign origin at its preflight, as the Origin check refuses it', async () => {
    const response = await fetch(`${stack().mcpUrl}/`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-headers')).toBeNull();
  });

  it('answers 403 to a request from an Origin it does not serve', async () => {
    const response = await fetch(`${stack().mcpUrl}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(403);
  });
});

describe('registration', () => {
  it('registers a public client and answers its metadata without a secret', async () => {
    const response = await register({
      client_name: 'Claude Code',
      redirect_uris: ['http://localhost/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid email profile',
      application_type: 'native',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'Claude Code',
      redirect_uris: ['http://localhost/callback'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
      scope: 'openid email profile',
    });
    expect(body).not.toHaveProperty('client_secret');
  });

  it('registers a confidential client by default (RFC 7591: client_secret_basic) with a secret that never expires', async () => {
    const response = await register({ redirect_uris: ['https://app.example.com/cb'] });
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.client_secret_expires_at).toBe(0);
  });

  it("accepts Cursor's registration: a private-use scheme beside https and loopback", async () => {
    const client = await registerClient(stack().mcpUrl, {
      redirect_uris: [
        'cursor://anysphere.cursor-mcp/oauth/callback',
        'https://www.cursor.com/agents/mcp/oauth/callback',
        'http://localhost:8787/callback',
      ],
    });
    expect(client.redirect_uris).toHaveLength(3);
  });

  it.each([
    'search-ms:query=invoice&crumb=location:\\\\evil.example\\share',
    'ms-officecmd:{"id":3}',
    'jar:https://evil.example/a.jar!/cb',
    'shell:startup',
    'ms-msdt:/id%20PCWDiagnostic',
    'x-apple.systempreferences:com.apple.preference.security',
    'myapp://callback',
  ])(
    'refuses to register the OS handler scheme of %s with 400 invalid_redirect_uri',
    async (uri) => {
      const response = await register({ redirect_uris: ['https://ok.example/cb', uri] });
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { error: string; error_description: string };
      expect(answer.error).toBe('invalid_redirect_uri');
      expect(answer.error_description).toContain(new URL(uri).protocol);
    },
  );

  it.each([
    'vscode://vscode.github-authentication/did-authenticate',
    'vscode-insiders://vscode.github-authentication/did-authenticate',
    'windsurf://codeium.windsurf/oauth/callback',
    'zed://oauth/callback',
    'com.example.app:/oauth2redirect',
  ])('registers the editor or reverse-domain scheme of %s', async (uri) => {
    const client = await registerClient(stack().mcpUrl, { redirect_uris: [uri] });
    expect(client.redirect_uris).toEqual([uri]);
  });

  it('does not send people to an OS handler a client registered before the policy tightened', async () => {
    const client = await registerClient(stack().mcpUrl);
    const handler = 'search-ms:query=invoice&crumb=location:%5C%5Cevil.example%5Cshare';
    const { default: pg } = await import('pg');
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        'update private.oauth_clients set redirect_uris = redirect_uris || $2::text where client_id = $1',
        [client.client_id, handler],
      );
    } finally {
      await db.end();
    }
    const response = await fetch(
      `${stack().mcpUrl}/authorize?response_type=code&client_id=${client.client_id}&redirect_uri=${encodeURIComponent(handler)}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
      { redirect: 'manual' },
    );
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it.each([
    [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [
      { redirect_uris: ['https://ok.example/cb', 'https://bad.example/cb#x'] },
      'invalid_redirect_uri',
    ],
    [{}, 'invalid_redirect_uri'],
    [
      { redirect_uris: ['https://ok.example/cb'], grant_types: ['implicit'] },
      'invalid_client_metadata',
    ],
    [
      { redirect_uris: ['https://ok.example/cb'], token_endpoint_auth_method: 'tls_client_auth' },
      'invalid_client_metadata',
    ],
    ['{not json', 'invalid_client_metadata'],
    [[1, 2], 'invalid_client_metadata'],
  ])('refuses %j with 400 %s', async (body, error) => {
    const response = await register(body);
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: string; error_description: string };
    expect(answer.error).toBe(error);
    expect(answer.error_description.length).toBeGreaterThan(5);
  });

  it('refuses a body over 64 KiB with 413 before reading it all', async () => {
    const response = await register({
      redirect_uris: ['https://a.example/cb'],
      client_name: 'x'.repeat(70_000),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('refuses a body that is not JSON by its content type', async () => {
    const response = await register(
      'redirect_uris=https://a.example/cb',
      'application/x-www-form-urlencoded',
    );
    expect(response.status).toBe(400);
  });

  it('never expires a registration: an old client still authorizes', async () => {
    const client = await registerClient(stack().mcpUrl);
    const { default: pg } = await import('pg');
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        "update private.oauth_clients set created_at = now() - interval '3 years' where client_id = $1",
        [client.client_id],
      );
      await db.query('select private.sweep_oauth_state()');
    } finally {
      await db.end();
    }
    const response = await fetch(
      `${stack().mcpUrl}/authorize?response_type=code&client_id=${client.client_id}&redirect_uri=${encodeURIComponent('http://127.0.0.1:1/callback')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
      { redirect: 'manual' },
    );
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toMatch(/\/mcp\/consent\?rid=/);
  });
});
