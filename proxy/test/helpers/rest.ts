// Stock PostgREST (the stack's pinned binary) over a proxy test's database, and user access
// tokens signed with its secret: the REST calls of the dashboard and the tool server (PATCH a
// breakpoint, POST a device) made for real, RLS and triggers included.

import { SignJWT } from 'jose';
import type { Logger } from 'pino';
import { WELL_KNOWN_JWT_SECRET } from '../../../packages/stack/src/keys.ts';
import { findFreePort } from '../../../packages/stack/src/ports.ts';
import { type RunningPostgrest, startPostgrest } from '../../../packages/stack/src/postgrest.ts';

export interface Rest {
  url: string;
  /** A user's access token (role authenticated), as the auth service would sign it. */
  tokenFor(userId: string): Promise<string>;
  /** One call to PostgREST (paths without the gateway's /rest/v1), the token in both headers. */
  call(
    token: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }>;
  stop(): Promise<void>;
}

export async function startRest(databaseUrl: string, logger: Logger): Promise<Rest> {
  const dbPort = Number(new URL(databaseUrl).port);
  const port = await findFreePort();
  const adminPort = await findFreePort();
  const server: RunningPostgrest = await startPostgrest({
    dbPort,
    port,
    adminPort,
    jwtSecret: WELL_KNOWN_JWT_SECRET,
    schemas: ['public'],
    extraSearchPath: ['public', 'extensions'],
    maxRows: 1000,
    logger,
  });
  return {
    url: server.url,
    tokenFor: (userId) =>
      new SignJWT({ role: 'authenticated', aud: 'authenticated', sub: userId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode(WELL_KNOWN_JWT_SECRET)),
    async call(token, method, path, body) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          apikey: token,
          'content-type': 'application/json',
          prefer: 'return=representation',
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    stop: () => server.stop(),
  };
}
