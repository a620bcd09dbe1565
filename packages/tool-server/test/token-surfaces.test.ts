// One OAuth access token on every surface (001 §1, §5): REST with the token in both headers,
// Realtime postgres_changes, functions/v1 and the tool server's POST /; and a revoked one (by the
// client at /revoke, by the user over REST, or with its refresh family) refused on all of them.
// A dashboard session is not a token for the tool server; its /first-party-token exchange is.
import { createClient, type RealtimeChannel, type SupabaseClient } from '@supabase/supabase-js';
import { decodeJwt } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../stack/test/helpers/until.ts';
import {
  authorizeAndExchange,
  DEMO,
  postToMcp,
  signIn,
  useOAuthStack,
} from './helpers/oauth-stack.ts';

const stack = useOAuthStack();

const MEMBER_ID = 'a0000000-0000-4000-8000-000000000002';
/** The member's seeded Pixel 8 (supabase/seed.sql). */
const MEMBER_DEVICE = 'd0000000-0000-4000-8000-000000000001';
const MEMBER_CAPABILITIES = ['devices', 'entries', 'settings', 'services', 'tags'].flatMap(
  (section) => [`${section}:view`, `${section}:edit`],
);
/** docs/realtime.md: revoked tokens' channels are closed by a sweep every 5 s. */
const SWEEP_WAIT_MS = 12_000;

const clients: SupabaseClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) {
    await client.removeAllChannels();
    client.realtime.disconnect();
  }
});

/** supabase-js holding `token` as its key and as Authorization: both headers (001 §5.3). */
function clientWithToken(token: string): SupabaseClient {
  const client = createClient(stack().apiUrl, token, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { headers: { Authorization: `Bearer ${token}` } },
  });
  clients.push(client);
  return client;
}

/** A browser's client: the publishable key, Realtime speaking as `token` (docs/realtime.md). */
async function realtimeClient(token: string): Promise<SupabaseClient> {
  const client = createClient(stack().apiUrl, stack().keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  clients.push(client);
  await client.realtime.setAuth(token);
  return client;
}

interface Watch {
  channel: RealtimeChannel;
  hosts: string[];
  system: Array<{ status?: string; message?: string }>;
}

/** Joins `entries` changes of the member's device; rejects with the join error's message. */
async function watchMemberDevice(client: SupabaseClient, name: string): Promise<Watch> {
  const hosts: string[] = [];
  const system: Watch['system'] = [];
  const channel = client
    .channel(name)
    .on('system', {}, (payload) => system.push(payload as Watch['system'][number]))
    .on(
      'postgres_changes',
      {
        event: 'INSERT',
        schema: 'public',
        table: 'entries',
        filter: `device_uuid=eq.${MEMBER_DEVICE}`,
      },
      (change) => hosts.push(String((change.new as { host?: unknown }).host)),
    );
  await new Promise<void>((resolve, reject) =>
    channel.subscribe((status, error) => {
      if (status === 'SUBSCRIBED') resolve();
      else if (status !== 'CLOSED') reject(new Error(error?.message ?? status));
    }),
  );
  return { channel, hosts, system };
}

async function captureOnMemberDevice(host: string): Promise<void> {
  const service = createClient(stack().apiUrl, stack().keys.secretKey, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
  const { error } = await service.from('entries').insert({
    device_uuid: MEMBER_DEVICE,
    payload: { method: 'GET', host, url: `https://${host}/`, path: '/', statusCode: 200 },
  });
  expect(error).toBeNull();
}

async function restDevices(headers: Record<string, string>): Promise<Response> {
  return fetch(`${stack().apiUrl}/rest/v1/devices?select=uuid,owner_user_id`, { headers });
}

async function whoami(token: string | undefined, method = 'GET'): Promise<Response> {
  return fetch(`${stack().apiUrl}/functions/v1/whoami`, {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : { apikey: stack().keys.publishableKey },
  });
}

const mcpInitialize = (token: string) => postToMcp(stack().mcpUrl, token);

async function revokeAtEndpoint(token: string, clientId: string): Promise<void> {
  const response = await fetch(`${stack().mcpUrl}/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, client_id: clientId }),
  });
  expect(response.status).toBe(200);
}

async function revokeOverRest(token: string): Promise<void> {
  // The user revokes the app's token from their dashboard session, as the api_tokens policy allows.
  const session = await signIn(stack(), DEMO.member);
  const jti = String(decodeJwt(token).jti);
  const response = await fetch(`${stack().apiUrl}/rest/v1/api_tokens?jti=eq.${jti}`, {
    method: 'PATCH',
    headers: {
      apikey: session,
      authorization: `Bearer ${session}`,
      'content-type': 'application/json',
      prefer: 'return=representation',
    },
    body: JSON.stringify({ revoked_at: new Date().toISOString() }),
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual([expect.objectContaining({ jti, revoked: true })]);
}

/** The token still works everywhere and a channel joined with it streams; returns that channel. */
async function expectAcceptedEverywhere(token: string): Promise<Watch> {
  expect((await restDevices({ apikey: token, authorization: `Bearer ${token}` })).status).toBe(200);
  const response = await whoami(token);
  expect(response.status).toBe(200);
  await response.body?.cancel();
  const mcp = await mcpInitialize(token);
  expect(mcp.status).toBe(200);
  await mcp.body?.cancel();
  const watch = await watchMemberDevice(await realtimeClient(token), `pre-${Date.now()}`);
  const host = `pre-revoke-${Date.now()}.example`;
  await captureOnMemberDevice(host);
  await until(() => (watch.hosts.includes(host) ? true : undefined));
  return watch;
}

/** After revocation: REST 401, no join, the joined channel closed, whoami 401, MCP 401. */
async function expectRefusedEverywhere(token: string, joined: Watch): Promise<void> {
  const rest = await restDevices({ apikey: token, authorization: `Bearer ${token}` });
  expect(rest.status).toBe(401);
  expect(await rest.json()).toMatchObject({ code: 'PGRST301', message: 'JWT revoked' });

  const join = await watchMemberDevice(await realtimeClient(token), `post-${Date.now()}`).then(
    () => 'SUBSCRIBED',
    (error: Error) => error.message,
  );
  expect(join).toContain('Token has been revoked');

  const closed = await until(
    () => joined.system.find((message) => message.status === 'error'),
    SWEEP_WAIT_MS,
  );
  expect(closed.message).toBe('Token has been revoked');
  const host = `post-revoke-${Date.now()}.example`;
  await captureOnMemberDevice(host);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(joined.hosts).not.toContain(host);

  const fn = await whoami(token);
  expect(fn.status).toBe(401);
  expect(await fn.json()).toEqual({ error: 'unauthorized', message: 'JWT revoked' });

  const mcp = await mcpInitialize(token);
  expect(mcp.status).toBe(401);
  expect(mcp.headers.get('www-authenticate')).toContain('error="invalid_token"');
  await mcp.body?.cancel();
}

describe('one OAuth access token on every surface', () => {
  let token: string;
  let clientId: string;
  beforeAll(async () => {
    const issued = await authorizeAndExchange(stack());
    token = issued.access_token;
    clientId = issued.client.client_id;
  });

  it("reads the member's devices over REST, supabase-js sending it in both headers", async () => {
    const { data, error } = await clientWithToken(token)
      .from('devices')
      .select('uuid, owner_user_id')
      .order('uuid');
    expect(error).toBeNull();
    expect(data?.map((row) => row.uuid)).toEqual([
      'd0000000-0000-4000-8000-000000000001',
      'd0000000-0000-4000-8000-000000000002',
      'd0000000-0000-4000-8000-000000000003',
    ]);
    expect(new Set(data?.map((row) => row.owner_user_id))).toEqual(new Set([MEMBER_ID]));
  });

  it.each([
    ['only in Authorization', () => ({ authorization: `Bearer ${token}` })],
    ['only in apikey', () => ({ apikey: token })],
  ])('is refused 401 at the gateway when sent %s (001 §5.3, §7)', async (_name, headers) => {
    const response = await restDevices(headers());
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'PGRST301' });
  });

  it("streams postgres_changes of the member's device to a channel joined with it", async () => {
    const watch = await watchMemberDevice(await realtimeClient(token), 'member-device');
    const host = `surfaces-${Date.now()}.example`;
    await captureOnMemberDevice(host);
    expect(await until(() => watch.hosts.find((seen) => seen === host))).toBe(host);
  });

  it("answers functions/v1/whoami with the member's id, role and capabilities", async () => {
    const { data, error } = await clientWithToken(token).functions.invoke('whoami', {
      method: 'GET',
    });
    expect(error).toBeNull();
    expect(data).toEqual({
      user_id: MEMBER_ID,
      email: DEMO.member.email,
      roles: [{ slug: 'member', name: 'Member', is_admin: false }],
      capabilities: MEMBER_CAPABILITIES,
      is_admin: false,
      token: { jti: decodeJwt(token).jti, client_id: clientId, label: 'oauth' },
    });
  });

  it('is accepted by the tool server at POST {mcp_url}/', async () => {
    const response = await mcpInitialize(token);
    expect(response.status).toBe(200);
    await response.body?.cancel();
  });
});

describe('functions/v1/whoami without a user token', () => {
  it('answers 401 unauthorized to the publishable key alone (no anonymous callers)', async () => {
    const response = await whoami(undefined);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      error: 'unauthorized',
      message: "A signed-in user's access token is required.",
    });
    expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('answers 405 for a method other than GET and POST', async () => {
    const { access_token } = await authorizeAndExchange(stack());
    const response = await whoami(access_token, 'PUT');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, POST, OPTIONS');
    await response.body?.cancel();
  });

  // Regression (stack gateway): the edge runtime skips verify_jwt for OPTIONS so that functions
  // answer their own preflight (supabase/cli functions/serve main.ts: `req.method !== "OPTIONS"`);
  // a browser's preflight carries no Authorization.
  it('lets a tokenless CORS preflight reach the function, as the edge runtime does', async () => {
    const response = await fetch(`${stack().apiUrl}/functions/v1/whoami`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, apikey, content-type',
      },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toContain('authorization');
    await response.body?.cancel();
  });
});

describe('a revoked access token is refused on every surface', () => {
  it.each([
    [
      'by its client at POST {mcp_url}/revoke',
      (token: string, clientId: string) => revokeAtEndpoint(token, clientId),
    ],
    [
      'by the user over REST (PATCH api_tokens revoked_at)',
      (token: string, _clientId: string) => revokeOverRest(token),
    ],
  ])(
    'revoked %s',
    async (_way, revoke) => {
      const { access_token, client } = await authorizeAndExchange(stack());
      const joined = await expectAcceptedEverywhere(access_token);
      await revoke(access_token, client.client_id);
      await expectRefusedEverywhere(access_token, joined);
    },
    45_000,
  );

  it('revoking the refresh token revokes its family and the access token with it', async () => {
    const { access_token, refresh_token, client } = await authorizeAndExchange(stack());
    const joined = await expectAcceptedEverywhere(access_token);
    await revokeAtEndpoint(refresh_token, client.client_id);
    await expectRefusedEverywhere(access_token, joined);
    const refresh = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token,
        client_id: client.client_id,
      }),
    });
    expect(refresh.status).toBe(400);
    expect(await refresh.json()).toMatchObject({ error: 'invalid_grant' });
  }, 45_000);
});

describe('dashboard sessions and the first-party exchange', () => {
  let session: string;
  beforeAll(async () => {
    session = await signIn(stack(), DEMO.member);
  });

  it('refuses a dashboard session at POST {mcp_url}/: not a token for this resource', async () => {
    const response = await mcpInitialize(session);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await response.body?.cancel();
  });

  it('accepts its /first-party-token exchange on REST, functions and POST {mcp_url}/', async () => {
    const exchange = await fetch(`${stack().mcpUrl}/first-party-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session}` },
    });
    expect(exchange.status).toBe(200);
    const { access_token } = (await exchange.json()) as { access_token: string };

    const { data, error } = await clientWithToken(access_token).from('devices').select('uuid');
    expect(error).toBeNull();
    expect(data).toHaveLength(3);

    const fn = await whoami(access_token);
    expect(fn.status).toBe(200);
    expect(await fn.json()).toMatchObject({
      user_id: MEMBER_ID,
      token: { jti: decodeJwt(access_token).jti, client_id: 'dashboard', label: 'oauth' },
    });

    const mcp = await mcpInitialize(access_token);
    expect(mcp.status).toBe(200);
    await mcp.body?.cancel();
  });
});
