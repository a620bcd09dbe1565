// Partner stand-ins as real HTTP servers on 127.0.0.1: a backend answering GET /users/me for
// the tokens it issued (plus misbehaving variants), a JWKS server whose keys can rotate, an
// HMAC signer, and PKCE pairs made the way the reference drop-ins make them.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export interface PartnerUser {
  id: string;
  email?: string;
  email_verified?: boolean;
}

export interface PartnerBackend {
  url: string;
  /** Issues a bearer token the backend will accept for this user. */
  signIn(user: PartnerUser): string;
  /** Requests the backend saw, for "no redirect was followed" checks. */
  hits: string[];
  close(): Promise<void>;
}

/**
 * `{url}` answers /users/me properly; `{url}/redirect` answers 302 to `{url}/evil`;
 * `{url}/broken` answers 503; `{url}/huge` answers 200 with a 200 KiB body.
 */
export async function startPartnerBackend(): Promise<PartnerBackend> {
  const tokens = new Map<string, PartnerUser>();
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(`${request.method} ${request.url} ${request.headers.authorization ?? ''}`);
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '';
    switch (request.url) {
      case '/users/me': {
        const user = tokens.get(token);
        response.writeHead(user ? 200 : 401, { 'content-type': 'application/json' });
        response.end(JSON.stringify(user ?? { error: 'unauthorized' }));
        return;
      }
      case '/redirect/users/me':
        response.writeHead(302, {
          location: `http://127.0.0.1:${(server.address() as AddressInfo).port}/evil`,
        });
        response.end();
        return;
      case '/broken/users/me':
        response.writeHead(503, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ id: 'would-be-user', email: 'x@example.com' }));
        return;
      case '/huge/users/me':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ id: 'huge', email: 'huge@example.com', pad: 'x'.repeat(200_000) }),
        );
        return;
      default:
        response.writeHead(404);
        response.end();
    }
  });
  const url = await listen(server);
  return {
    url,
    hits,
    signIn(user) {
      const token = randomBytes(24).toString('base64url');
      tokens.set(token, user);
      return token;
    },
    close: () => close(server),
  };
}

export interface JwksServer {
  url: string;
  issuer: string;
  /** Signs a token with the current key (kid included) unless told otherwise. */
  sign(
    claims: Record<string, unknown>,
    options?: { kid?: string | null; iat?: number },
  ): Promise<string>;
  /** Replaces the served key with a fresh one under a new kid. */
  rotate(): Promise<void>;
  publicJwk(): JWK;
  close(): Promise<void>;
}

export async function startJwksServer(): Promise<JwksServer> {
  let current = await makeKey();
  const server = createServer((request, response) => {
    if (request.url !== '/jwks.json') {
      response.writeHead(404);
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [current.jwk] }));
  });
  const url = await listen(server);
  return {
    url: `${url}/jwks.json`,
    issuer: `${url}/auth/v1`,
    async sign(claims, options = {}) {
      const kid = options.kid === undefined ? current.kid : options.kid;
      const header = kid === null ? { alg: 'ES256' } : { alg: 'ES256', kid };
      return new SignJWT(claims)
        .setProtectedHeader(header)
        .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
        .setExpirationTime((options.iat ?? Math.floor(Date.now() / 1000)) + 3600)
        .sign(current.privateKey);
    },
    async rotate() {
      current = await makeKey();
    },
    publicJwk: () => current.jwk,
    close: () => close(server),
  };
}

async function makeKey() {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomBytes(6).toString('hex');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { kid, jwk, privateKey };
}

/** 000 §4.1: canonical = JSON with sorted keys, undefined dropped (flat payloads here). */
export function signHmac(secret: string, payload: Record<string, unknown>): string {
  const canonical = JSON.stringify(
    Object.fromEntries(
      Object.entries(payload)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    ),
  );
  return createHmac('sha256', secret).update(canonical).digest('base64url');
}

export interface PkcePair {
  code_verifier: string;
  code_challenge: string;
}

/** 000 §2.1: 32 random bytes as base64url, challenge = BASE64URL(SHA256(ASCII(verifier))). */
export function makePkcePair(verifier = randomBytes(32).toString('base64url')): PkcePair {
  return {
    code_verifier: verifier,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
  };
}

let counter = 0;
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}_${counter}`;
}
