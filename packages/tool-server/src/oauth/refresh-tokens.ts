// Refresh tokens (OAuth 2.1 §4.3): opaque, stored as SHA-256, in families. Every use rotates the
// token; a rotated token presented again after the reuse interval means one of two parties holds
// a copy, so the whole family and the access tokens it issued are revoked (OAuth 2.1 §4.3.1, RFC
// 9700 §4.14.2). Within the interval it is the same client racing itself and gets a successor.
import type pg from 'pg';
import { generateSecret, hashSecret } from './secrets.ts';

export async function issueRefreshToken(
  client: pg.PoolClient,
  options: { familyId: string; grantId: string; issuer: string; ttlSeconds: number },
): Promise<string> {
  const token = generateSecret(32);
  await client.query(
    `insert into private.oauth_refresh_tokens (token_hash, family_id, grant_id, issuer, expires_at)
     values ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
    [hashSecret(token), options.familyId, options.grantId, options.issuer, options.ttlSeconds],
  );
  return token;
}

export interface RefreshTokenRow {
  token_hash: string;
  family_id: string;
  grant_id: string;
  issuer: string;
  expires_at: Date;
  rotated_at: Date | null;
  /** Seconds since rotated_at, by the database clock. */
  rotated_seconds_ago: number | null;
  revoked_at: Date | null;
  grant_revoked_at: Date | null;
  user_id: string;
  client_id: string;
  scope: string;
  resource: string;
  email: string | null;
  /** A banned or deleted account refreshes nothing. */
  account_suspended: boolean;
}

/** The token's row with its grant, locked for the rotation decision. */
export async function lockRefreshToken(
  client: pg.PoolClient,
  token: string,
): Promise<RefreshTokenRow | undefined> {
  const { rows } = await client.query<RefreshTokenRow>(
    `select t.token_hash, t.family_id, t.grant_id, t.issuer, t.expires_at, t.rotated_at,
            extract(epoch from now() - t.rotated_at)::float8 as rotated_seconds_ago,
            t.revoked_at, g.revoked_at as grant_revoked_at, g.user_id, g.client_id, g.scope,
            -- The family's own host, not the grant's latest approval (one client may be allowed
            -- on both origins): this server's resource is the origin that issued the family.
            t.issuer as resource, u.email,
            (u.deleted_at is not null or coalesce(u.banned_until > now(), false)) as account_suspended
       from private.oauth_refresh_tokens t
       join private.oauth_grants g on g.id = t.grant_id
       join auth.users u on u.id = g.user_id
      where t.token_hash = $1
      for update of t`,
    [hashSecret(token)],
  );
  return rows[0];
}
