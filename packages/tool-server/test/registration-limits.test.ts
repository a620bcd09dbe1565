// The per-address registration limit (RFC 7591 leaves abuse control to the server) and the one
// registration a public loopback client gets back however often it registers from the same
// address (docs/tool-server.md "Registration"): mcp-remote registers again whenever its callback
// port changes, and RFC 8252 §7.3 makes the port no part of a loopback redirect URI. Each test
// registers from its own address (X-Forwarded-For behind one trusted hop) at the default limit.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  approveViaConsentApi,
  authorizeUrl,
  pkcePair,
  useOAuthStack,
} from './helpers/oauth-stack.ts';

const LIMIT = 30;
/** Hosts of 198.51.100.0/24 (TEST-NET-2) for the table below, one per row. */
let nextHost = 100;
const stack = useOAuthStack({
  toolServerSettings: { registrationsPerHour: LIMIT, trustedProxyHops: 1 },
});

/** What mcp-remote registers (its NodeOAuthClientProvider) with its callback on `port`. */
function mcpRemote(port: number, changes: Record<string, unknown> = {}) {
  return {
    redirect_uris: [`http://localhost:${port}/oauth/callback`],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    client_name: 'MCP CLI Client',
    client_uri: 'https://github.com/modelcontextprotocol/mcp-cli',
    software_id: '2e6dc280-f3c3-4e01-99a7-8181dbd1d23d',
    software_version: '0.1.29',
    ...changes,
  };
}

interface Registration {
  status: number;
  retryAfter: string | null;
  body: {
    client_id?: string;
    client_secret?: string;
    redirect_uris?: string[];
    error?: string;
  };
}

async function register(address: string, metadata: unknown): Promise<Registration> {
  const response = await fetch(`${stack().mcpUrl}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify(metadata),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Registration['body'],
  };
}

/** Registrations the limit counts: each a distinct web client. */
function webClient(index: number) {
  return {
    redirect_uris: [`https://app-${index}.example.com/callback`],
    token_endpoint_auth_method: 'none',
    client_name: `Web app ${index}`,
  };
}

/** Authorization, consent and token exchange with `redirectUri` as the client sends it. */
async function signIn(clientId: string, redirectUri: string): Promise<number> {
  const { verifier, challenge } = pkcePair();
  const back = await approveViaConsentApi(
    stack(),
    authorizeUrl(stack().mcpUrl, {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'state-1',
      resource: stack().mcpUrl,
    }),
  );
  expect(back.origin + back.pathname).toBe(redirectUri);
  const response = await fetch(`${stack().mcpUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code') ?? '',
      code_verifier: verifier,
      redirect_uri: redirectUri,
      client_id: clientId,
    }),
  });
  await response.body?.cancel();
  return response.status;
}

describe('registrations of a public loopback client', () => {
  // Regression: every mcp-remote sign-in on a new callback port was a new registration, so a
  // developer got 429 after about 30 sign-ins within an hour.
  it('gives 40 mcp-remote registrations on changing ports one client, counted once, that signs in on any of them', async () => {
    const address = '198.51.100.10';
    const answers: Registration[] = [];
    for (let port = 40_001; port <= 40_040; port += 1) {
      answers.push(await register(address, mcpRemote(port)));
    }
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(201));
    const clientId = answers[0]?.body.client_id as string;
    expect(clientId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(new Set(answers.map((answer) => answer.body.client_id))).toEqual(new Set([clientId]));
    expect(answers.some((answer) => 'client_secret' in answer.body)).toBe(false);
    // Each answer names the redirect URI as that instance sent it.
    expect(answers[39]?.body.redirect_uris).toEqual(['http://localhost:40040/oauth/callback']);

    for (const port of [40_001, 40_023, 40_040, 51_234]) {
      expect(await signIn(clientId, `http://localhost:${port}/oauth/callback`)).toBe(200);
    }

    // The 40 counted as one: 29 more registrations fit in the hour, the next does not.
    for (let index = 0; index < LIMIT - 1; index += 1) {
      expect((await register(address, webClient(index))).status).toBe(201);
    }
    const refused = await register(address, webClient(LIMIT));
    expect(refused.status).toBe(429);
  }, 60_000);

  it.each([
    ['another client_name', { client_name: 'Another CLI' }],
    ['another software_version', { software_version: '0.1.30' }],
    ['another callback path', { redirect_uris: ['http://localhost:40001/other/callback'] }],
    ['127.0.0.1 for localhost', { redirect_uris: ['http://127.0.0.1:40001/oauth/callback'] }],
    ['only authorization_code', { grant_types: ['authorization_code'] }],
    [
      'an https URI beside the loopback one',
      {
        redirect_uris: ['http://localhost:40001/oauth/callback', 'https://cli.example.com/cb'],
      },
    ],
  ])('gives a registration that differs by %s a client of its own', async (_, changes) => {
    const address = `198.51.100.${nextHost++}`;
    const first = await register(address, mcpRemote(40_000));
    const second = await register(address, mcpRemote(40_001, changes));
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.client_id).not.toBe(first.body.client_id);
  });

  it('gives the same registration from another address a client of its own', async () => {
    const first = await register('198.51.100.30', mcpRemote(40_000));
    const second = await register('198.51.100.31', mcpRemote(40_000));
    expect(second.body.client_id).not.toBe(first.body.client_id);
  });

  it('never shares a confidential loopback client: each registration gets its own id and secret', async () => {
    const address = '198.51.100.40';
    const confidential = mcpRemote(40_000, { token_endpoint_auth_method: 'client_secret_basic' });
    const first = await register(address, confidential);
    const second = await register(address, confidential);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second.body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second.body.client_id).not.toBe(first.body.client_id);
    expect(second.body.client_secret).not.toBe(first.body.client_secret);
  });

  it('does not hand out a shared client whose stored registration was changed since', async () => {
    const address = '198.51.100.50';
    const first = await register(address, mcpRemote(40_000));
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        `update private.oauth_clients set redirect_uris = redirect_uris || 'https://evil.example/cb'::text
          where client_id = $1`,
        [first.body.client_id],
      );
    } finally {
      await db.end();
    }
    const second = await register(address, mcpRemote(40_001));
    expect(second.status).toBe(201);
    expect(second.body.client_id).not.toBe(first.body.client_id);
    expect(second.body.redirect_uris).toEqual(['http://localhost:40001/oauth/callback']);
  });
});

describe('the registration limit', () => {
  it(`answers 429 with Retry-After to the ${LIMIT + 1}st registration from one address with web redirect URIs`, async () => {
    const address = '198.51.100.60';
    const statuses: number[] = [];
    for (let index = 0; index < LIMIT; index += 1) {
      statuses.push((await register(address, webClient(index))).status);
    }
    expect(statuses).toEqual(Array(LIMIT).fill(201));
    const refused = await register(address, webClient(LIMIT));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    // Another address is not held back by this one.
    expect((await register('198.51.100.61', webClient(0))).status).toBe(201);
  });

  it('counts a confidential loopback registration each time', async () => {
    const address = '198.51.100.70';
    const confidential = mcpRemote(40_000, { token_endpoint_auth_method: 'client_secret_post' });
    for (let index = 0; index < LIMIT; index += 1) {
      expect((await register(address, confidential)).status).toBe(201);
    }
    expect((await register(address, confidential)).status).toBe(429);
  });
});
