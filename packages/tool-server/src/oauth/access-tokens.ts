// Access tokens: HS256 JWTs with the project secret, so stock PostgREST, Realtime and the edge
// runtime verify them (001 §1, architecture "Identity"), each recorded by jti in api_tokens with
// label 'oauth' so revocation works on every surface.
// Claims: sub, role 'authenticated', aud = [this resource, 'authenticated'] (RFC 8707 audience
// for us, PostgREST's role audience for the data API), iss = the host called, client_id, scope,
// jti, a short exp.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type pg from 'pg';

export const AUTHENTICATED_AUDIENCE = 'authenticated';
export const OAUTH_TOKEN_LABEL = 'oauth';

export interface AccessTokenSubject {
  userId: string;
  email: string | null;
  clientId: string;
  scope: string;
  issuer: string;
  resource: string;
  grantId: string | null;
  familyId: string | null;
}

export interface IssuedAccessToken {
  token: string;
  jti: string;
  expiresIn: number;
}

export async function issueAccessToken(
  client: pg.PoolClient,
  subject: AccessTokenSubject,
  secret: Uint8Array,
  ttlSeconds: number,
): Promise<IssuedAccessToken> {
  const jti = randomUUID();
  const now = Math.floor(Date.now() / 1000);
  await client.query(
    `insert into public.api_tokens (jti, user_id, label, client_id, scopes, created_at, expires_at)
     values ($1, $2, $3, $4, $5, to_timestamp($6), to_timestamp($7))`,
    [
      jti,
      subject.userId,
      OAUTH_TOKEN_LABEL,
      subject.clientId,
      subject.scope.split(' '),
      now,
      now + ttlSeconds,
    ],
  );
  await client.query(
    'insert into private.oauth_access_tokens (jti, grant_id, family_id) values ($1, $2, $3)',
    [jti, subject.grantId, subject.familyId],
  );
  const token = await new SignJWT({
    role: 'authenticated',
    email: subject.email ?? '',
    client_id: subject.clientId,
    scope: subject.scope,
    aal: 'aal1',
    is_anonymous: false,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(subject.issuer)
    .setSubject(subject.userId)
    .setAudience([subject.resource, AUTHENTICATED_AUDIENCE])
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(jti)
    .sign(secret);
  return { token, jti, expiresIn: ttlSeconds };
}
