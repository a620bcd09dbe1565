// The partner's side of the world on loopback for the end-to-end test: its backend's
// GET /users/me (verify mode backend_bearer), its POST /federation/credential signing HMAC
// assertions with the drop-ins' signer (hmac), its JWKS and token issuer (hosted_jwt), and the
// companion's universal-link landing page, all on one real HTTP server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { createHmacPayload, signHmacPayload } from '../../src/index.ts';

export interface PartnerUser {
  sub: string;
  email: string;
}

export interface PartnerStandIns {
  /** Base URL of the partner backend (`backend_base_url`) and of the JWKS. */
  url: string;
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** Registers a user and returns their partner-backend access token. */
  signIn(user: PartnerUser): string;
  /** A live ES256 access token for the user, as the partner's hosted auth would issue it. */
  hostedToken(user: PartnerUser): Promise<string>;
  /** Paths the companion landing page was asked for (what a server sees of a universal link). */
  landings: string[];
  /** The HMAC secret POST /federation/credential signs with (set once the client is onboarded). */
  hmacSecret: string;
  /** The code_challenge values /federation/credential was asked to sign. */
  signedChallenges: string[];
  close(): Promise<void>;
}

export async function startPartnerStandIns(): Promise<PartnerStandIns> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk: JWK = {
    ...(await exportJWK(publicKey)),
    kid: 'partner-key-1',
    alg: 'ES256',
    use: 'sig',
  };
  const sessions = new Map<string, PartnerUser>();
  const landings: string[] = [];
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '';
    if (path === '/users/me') {
      const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
      const user = token ? sessions.get(token) : undefined;
      if (!user) {
        response
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"error":"unauthorized"}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ id: user.sub, email: user.email, email_verified: true }));
      return;
    }
    if (path === '/federation/credential' && request.method === 'POST') {
      // What a partner backend does for credentialFromPartnerBackend: authenticate its own user,
      // then sign an assertion bound to the device's challenge; the secret stays here.
      const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
      const user = token ? sessions.get(token) : undefined;
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', async () => {
        const { code_challenge } = JSON.parse(Buffer.concat(chunks).toString()) as {
          code_challenge: string;
        };
        if (!user || !standIns.hmacSecret) {
          response.writeHead(401).end();
          return;
        }
        standIns.signedChallenges.push(code_challenge);
        const credential = await signHmacPayload(
          standIns.hmacSecret,
          createHmacPayload(user, { codeChallenge: code_challenge }),
        );
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(credential));
      });
      return;
    }
    if (path === '/jwks.json') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    landings.push(path);
    response.writeHead(200, { 'content-type': 'text/html', 'referrer-policy': 'no-referrer' });
    response.end('<!doctype html><title>companion</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${url}/auth/v1`;
  const audience = 'capture-federation-broker';
  const standIns: PartnerStandIns = {
    url,
    jwksUrl: `${url}/jwks.json`,
    issuer,
    audience,
    landings,
    hmacSecret: '',
    signedChallenges: [],
    signIn(user) {
      const token = `partner-token-${crypto.randomUUID()}`;
      sessions.set(token, user);
      return token;
    },
    hostedToken: (user) =>
      new SignJWT({ email: user.email, email_verified: true })
        .setProtectedHeader({ alg: 'ES256', kid: 'partner-key-1', typ: 'JWT' })
        .setSubject(user.sub)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return standIns;
}
