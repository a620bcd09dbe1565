// The official MCP SDK clients driven through the whole authorization against a stack, headless:
// connect (401 → RFC 9728 → RFC 8414 → RFC 7591 registration → authorize → consent), finishAuth,
// then reconnect authenticated. Every request the SDK makes is logged as `METHOD /path status`.
import type { RunningStack } from '@capture/stack';
import {
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  Client as V2Client,
} from '@modelcontextprotocol/client';
import type { OAuthDiscoveryState as V1DiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError as V1UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed as V1ClientInformation,
  OAuthTokens as V1Tokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'vitest';
import { HeadlessOAuthProvider } from './headless-provider.ts';

/** A fetch that records `METHOD /path status` for every request the SDK makes. */
export function recordingFetch(log: string[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    log.push(`${method} ${new URL(url).pathname} ${response.status}`);
    return response;
  };
}

/** True when `wanted` appears in `log` in this order (other entries may come between). */
export function inOrder(log: string[], wanted: string[]): boolean {
  let next = 0;
  for (const entry of log) if (entry === wanted[next]) next += 1;
  return next === wanted.length;
}

export const DISCOVERY_AND_REGISTRATION = [
  'POST / 401',
  'GET /.well-known/oauth-protected-resource 200',
  'GET /.well-known/oauth-authorization-server 200',
  'POST /register 201',
];

export interface FlowOptions {
  /** Register without token_endpoint_auth_method: a confidential client_secret_basic client. */
  omitAuthMethod?: boolean;
  /** The user agent's part of the flow (HeadlessProviderOptions.approve). */
  approve?: (authorizationUrl: URL) => Promise<URL>;
}

function providerFor<ClientInformation, Tokens, DiscoveryState>(
  stack: RunningStack,
  base: string,
  clientName: string,
  options: FlowOptions = {},
) {
  // A loopback redirect nobody listens on: the headless user agent never follows it.
  return new HeadlessOAuthProvider<ClientInformation, Tokens, DiscoveryState>({
    stack,
    redirectUrl: 'http://127.0.0.1:9/callback',
    clientName: `${clientName} (${new URL(base).host})`,
    omitAuthMethod: options.omitAuthMethod,
    approve: options.approve,
  });
}

/** v1: connect (401 → discovery → registration → consent), finishAuth(code), reconnect. */
export async function runV1Flow(stack: RunningStack, base: string, options: FlowOptions = {}) {
  const provider = providerFor<V1ClientInformation, V1Tokens, V1DiscoveryState>(
    stack,
    base,
    'SDK v1',
    options,
  );
  const log: string[] = [];
  const newClient = () => new V1Client({ name: 'sdk-v1-headless', version: '1.0.0' });
  const newTransport = () =>
    new V1Transport(new URL(base), { authProvider: provider, fetch: recordingFetch(log) });

  const first = newTransport();
  await expect(newClient().connect(first)).rejects.toBeInstanceOf(V1UnauthorizedError);
  expect(inOrder(log, DISCOVERY_AND_REGISTRATION)).toBe(true);
  // v1's finishAuth takes the bare code (it has no RFC 9207 check of its own).
  await first.finishAuth(provider.callbackUrl?.searchParams.get('code') ?? '');
  expect(log.at(-1)).toBe('POST /token 200');

  const client = newClient();
  await client.connect(newTransport());
  const clientId = provider.clientInformation()?.client_id ?? '';
  const accessToken = provider.tokens()?.access_token ?? '';
  return { provider, client, log, clientId, accessToken };
}

/** v2: the same, with finishAuth(callback parameters), which checks iss (RFC 9207). */
export async function runV2Flow(
  stack: RunningStack,
  base: string,
  mode: 'legacy' | 'auto',
  options: FlowOptions = {},
) {
  const provider = providerFor<
    StoredOAuthClientInformation,
    StoredOAuthTokens,
    OAuthDiscoveryState
  >(stack, base, `SDK v2 ${mode}`, options);
  const log: string[] = [];
  const newClient = () =>
    new V2Client({ name: 'sdk-v2-headless', version: '1.0.0' }, { versionNegotiation: { mode } });
  const newTransport = () =>
    new StreamableHTTPClientTransport(new URL(base), {
      authProvider: provider,
      fetch: recordingFetch(log),
    });

  const first = newTransport();
  await expect(newClient().connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(inOrder(log, DISCOVERY_AND_REGISTRATION)).toBe(true);
  await first.finishAuth(provider.callbackUrl?.searchParams ?? new URLSearchParams());
  expect(log.at(-1)).toBe('POST /token 200');

  const client = newClient();
  await client.connect(newTransport());
  const clientId = String(provider.clientInformation()?.client_id ?? '');
  const accessToken = provider.tokens()?.access_token ?? '';
  return { provider, client, log, clientId, accessToken };
}
