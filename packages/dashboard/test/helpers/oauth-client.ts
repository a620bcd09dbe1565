// A stand-in OAuth client of the tool server for consent tests: registers itself by DCR with a
// loopback redirect URI it really listens on (RFC 8252 §7.3), builds the PKCE authorization URL a
// browser opens, and records every redirect the browser brings back.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type StandInClient = {
  clientId: string;
  redirectUri: string;
  /** Redirects the browser delivered to the client, oldest first. */
  callbacks: URL[];
  /** A fresh authorization request: open it in the browser to reach the consent page. */
  authorizationUrl(state: string): string;
  /** The PKCE verifier of the request made with `state`, for the token exchange. */
  verifierFor(state: string): string | undefined;
  stop(): Promise<void>;
};

/** Registers a client; without a name it registers none (the page then shows the client_id). */
export async function startStandInClient(mcpUrl: string, clientName?: string) {
  const callbacks: URL[] = [];
  const verifiers = new Map<string, string>();
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    // Only the redirect itself; the browser also asks the page's origin for /favicon.ico.
    if (url.pathname === '/callback') callbacks.push(url);
    response.writeHead(200, { 'content-type': 'text/plain' }).end('back at the client');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  const stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  try {
    const response = await fetch(`${mcpUrl}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...(clientName === undefined ? {} : { client_name: clientName }),
        // Each stand-in is a client of its own: identical loopback registrations from one address
        // would share one (docs/tool-server.md, registrations).
        software_id: randomUUID(),
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      }),
    });
    const registered = (await response.json()) as { client_id?: string };
    if (response.status !== 201 || !registered.client_id) {
      throw new Error(`registration failed: ${response.status} ${JSON.stringify(registered)}`);
    }
    const clientId = registered.client_id;
    const client: StandInClient = {
      clientId,
      redirectUri,
      callbacks,
      authorizationUrl(state) {
        const verifier = randomBytes(32).toString('base64url');
        verifiers.set(state, verifier);
        const url = new URL(`${mcpUrl}/authorize`);
        url.search = new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256',
          state,
          resource: mcpUrl,
        }).toString();
        return url.toString();
      },
      verifierFor: (state) => verifiers.get(state),
      stop,
    };
    return client;
  } catch (error) {
    await stop();
    throw error;
  }
}
