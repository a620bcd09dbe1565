// An access token exactly as the tool server issues one after the OAuth flow: HS256-signed with
// the project secret, audience the MCP origin, and its jti recorded in api_tokens (so bearer
// auth accepts it), for benchmarks that must not spend their time in the consent flow.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type pg from 'pg';

export async function mintAccessToken(
  db: pg.Client,
  stack: { mcpUrl: string; keys: { jwtSecret: string } },
  userId: string,
): Promise<string> {
  const jti = randomUUID();
  await db.query(
    `insert into public.api_tokens (jti, user_id, label, client_id, scopes, expires_at)
     values ($1, $2, 'oauth', 'bench', '{dashboard}', now() + interval '2 hours')`,
    [jti, userId],
  );
  return new SignJWT({ role: 'authenticated', client_id: 'bench', scope: 'dashboard' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(stack.mcpUrl)
    .setSubject(userId)
    .setAudience([stack.mcpUrl, 'authenticated'])
    .setJti(jti)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(new TextEncoder().encode(stack.keys.jwtSecret));
}
