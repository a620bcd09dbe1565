// A throwaway stack of this repository (migrations, seed, tool server) per test file, and the
// steps of the OAuth flow as a user and a client perform them: a dashboard sign-in, a DCR
// registration, an authorization request, the consent decision through the consent API.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, type RunningStack, type StackOptions, startStack } from '@capture/stack';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';

export const DEMO = {
  admin: { email: 'admin@demo.local', password: 'demo-admin-pass' },
  member: { email: 'user@demo.local', password: 'demo-user-pass' },
  viewer: { email: 'viewer@demo.local', password: 'demo-viewer-pass' },
} as const;

/** Starts the repo stack for this test file; the getter is valid inside tests. */
export function useOAuthStack(options: Partial<StackOptions> = {}): () => RunningStack {
  let stack: RunningStack | undefined;
  let dataDir = '';
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tool-server-test-'));
    stack = await startStack({
      projectDir: REPO_ROOT,
      dataDir,
      ports: 'free',
      ephemeral: true,
      proxy: false,
      logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
      ...options,
      // Tests register many clients from one address; the rate limit has its own test.
      toolServerSettings: { registrationsPerHour: 10_000, ...options.toolServerSettings },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return () => {
    if (!stack) throw new Error('the stack is not started');
    return stack;
  };
}

/** A dashboard session's access token: a password sign-in against the stack's auth. */
export async function signIn(
  stack: RunningStack,
  login: { email: string; password: string },
): Promise<string> {
  const response = await fetch(`${stack.apiUrl}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: stack.keys.publishableKey, 'content-type': 'application/json' },
    body: JSON.stringify(login),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`sign-in of ${login.email} failed: ${response.status}`);
  return body.access_token;
}

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  redirect_uris: string[];
}

export async function registerClient(
  baseUrl: string,
  metadata: Record<string, unknown> = {},
): Promise<RegisteredClient> {
  const response = await fetch(`${baseUrl}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      client_name: 'Test client',
      // Each call its own client: the same loopback registration from one address would get the
      // same client_id (and so one grant per user) every time (docs/tool-server.md).
      software_id: randomUUID(),
      ...metadata,
    }),
  });
  if (response.status !== 201) throw new Error(`registration failed: ${await response.text()}`);
  return (await response.json()) as RegisteredClient;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizeUrl(baseUrl: string, parameters: Record<string, string>): string {
  const url = new URL(`${baseUrl}/authorize`);
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return url.toString();
}

/** GET /authorize without following; returns the request id of the consent redirect. */
export async function startAuthorization(url: string): Promise<string> {
  const response = await fetch(url, { redirect: 'manual' });
  const location = response.headers.get('location') ?? '';
  const rid = location ? new URL(location).searchParams.get('rid') : null;
  if (response.status !== 302 || !rid || !location.includes('/mcp/consent?rid=')) {
    throw new Error(`authorize did not go to consent: ${response.status} ${location}`);
  }
  return rid;
}

/** The consent decision as the dashboard sends it; returns the redirect URL it answers. */
export async function decide(
  baseUrl: string,
  rid: string,
  sessionToken: string,
  action: 'approve' | 'deny',
): Promise<string> {
  const response = await fetch(`${baseUrl}/oauth/authorizations/${rid}/consent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action }),
  });
  const body = (await response.json()) as { redirect_url?: string };
  if (response.status !== 200 || !body.redirect_url) {
    throw new Error(`consent failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.redirect_url;
}

/** A full authorization with the consent API: register, authorize, approve, exchange. */
export async function authorizeAndExchange(
  stack: RunningStack,
  login: { email: string; password: string } = DEMO.member,
  baseUrl = stack.mcpUrl,
): Promise<{ client: RegisteredClient; access_token: string; refresh_token: string }> {
  const client = await registerClient(baseUrl);
  const { verifier, challenge } = pkcePair();
  const redirectUri = 'http://127.0.0.1:9/callback';
  const rid = await startAuthorization(
    authorizeUrl(baseUrl, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'state-1',
      resource: baseUrl,
    }),
  );
  const redirect = await decide(baseUrl, rid, await signIn(stack, login), 'approve');
  const code = new URL(redirect).searchParams.get('code') ?? '';
  const response = await fetch(`${baseUrl}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
      client_id: client.client_id,
    }),
  });
  const tokens = (await response.json()) as { access_token: string; refresh_token: string };
  if (response.status !== 200) throw new Error(`token failed: ${JSON.stringify(tokens)}`);
  return { client, ...tokens };
}

/**
 * What the user's browser does after a client opens `authorizationUrl`, without a browser:
 * /authorize sends it to the consent page, whose sign-in and Allow are done here through the
 * consent API at `consentBaseUrl`, as the page calls it. Returns the redirect back to the client.
 */
export async function approveViaConsentApi(
  stack: RunningStack,
  authorizationUrl: string | URL,
  login: { email: string; password: string } = DEMO.member,
  consentBaseUrl = stack.mcpUrl,
): Promise<URL> {
  const rid = await startAuthorization(authorizationUrl.toString());
  return new URL(await decide(consentBaseUrl, rid, await signIn(stack, login), 'approve'));
}

/** A legacy-era `initialize` JSON-RPC body, as a 2025-11-25 client sends it first. */
export const INITIALIZE_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'tool-server-tests', version: '1.0.0' },
  },
});

/** POST {base}/ with `token` as the bearer: an `initialize` unless another body is given. */
export function postToMcp(base: string, token: string, body = INITIALIZE_BODY): Promise<Response> {
  return fetch(`${base}/`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body,
  });
}

/** The status POST {base}/ answers for `token` (the body is drained). */
export async function mcpStatusFor(base: string, token: string): Promise<number> {
  const response = await postToMcp(base, token);
  await response.body?.cancel();
  return response.status;
}
