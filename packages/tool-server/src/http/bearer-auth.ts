// The resource-server half for POST / (001 §5.1, MCP authorization "Token Validation"): a token
// is accepted only if we signed it, it is for this host (RFC 8707 audience), it is unexpired, and
// its jti is recorded as a live OAuth token. Otherwise 401 with one Bearer challenge naming the
// resource metadata of the host called (RFC 9728 §5.1).
import { jwtVerify } from 'jose';
import { bearerToken } from '../auth/dashboard-session.ts';
import { protectedResourceMetadataUrl } from '../oauth/metadata.ts';
import { OAuthError } from '../oauth/oauth-error.ts';
import { canonicalResource } from '../oauth/resource.ts';
import { DASHBOARD_SCOPE } from '../oauth/scope.ts';
import type { Database } from '../store/database.ts';
import type { SignatureMemo } from './signature-memo.ts';

export interface VerifiedCaller {
  token: string;
  userId: string;
  clientId: string;
  scopes: string[];
  expiresAt: number;
  resource: string;
  claims: Record<string, unknown>;
}

function challenge(origin: string, error?: string, description?: string): string {
  const parts = [
    `resource_metadata="${protectedResourceMetadataUrl(origin)}"`,
    `scope="${DASHBOARD_SCOPE}"`,
  ];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description}"`);
  return `Bearer ${parts.join(', ')}`;
}

function unauthorized(origin: string, presented: boolean, description: string): OAuthError {
  return new OAuthError('invalid_token', description, {
    headers: {
      'www-authenticate': presented
        ? challenge(origin, 'invalid_token', description)
        : challenge(origin),
    },
  });
}

/** A token we signed, for this host, unexpired; whether it is still live is not yet known. */
export interface SignedToken {
  token: string;
  resource: string;
  claims: Record<string, unknown>;
}

/**
 * The signature, audience and issuer checks: no I/O, so admission (docs/tool-server.md "Fair
 * use") can run between this and the store lookup of confirmTokenLive(). A token already checked
 * for this host is taken from `memo` until it expires.
 */
export async function verifyTokenSignature(
  authorization: string | undefined,
  origin: string,
  secret: Uint8Array,
  memo: SignatureMemo,
): Promise<SignedToken> {
  const token = bearerToken(authorization);
  if (!token) throw unauthorized(origin, false, 'An access token is required');
  const resource = canonicalResource(origin) ?? origin;
  const remembered = memo.claimsOf(origin, token);
  if (remembered) return { token, resource, claims: remembered };
  try {
    // RFC 8707: for this host, and issued by it (each host is its own issuer, 001 §4.1).
    const { payload } = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      audience: resource,
      issuer: origin,
    });
    memo.remember(origin, token, payload);
    return { token, resource, claims: payload };
  } catch {
    throw unauthorized(origin, true, 'The access token is invalid, expired or not for this server');
  }
}

/** The signed token's jti is a live OAuth token of a live account that it names. */
export async function confirmTokenLive(
  db: Database,
  signed: SignedToken,
  origin: string,
): Promise<VerifiedCaller> {
  const { token, resource, claims } = signed;
  const jti = typeof claims.jti === 'string' ? claims.jti : '';
  const rows = await db.query<{ user_id: string; client_id: string | null; scopes: string[] }>(
    // A banned or deleted account's tokens stop at once, not at their exp.
    `select t.user_id, t.client_id, t.scopes
       from public.api_tokens t join auth.users u on u.id = t.user_id
      where t.jti = $1 and t.label = 'oauth' and t.revoked_at is null and t.expires_at > now()
        and u.deleted_at is null and (u.banned_until is null or u.banned_until < now())`,
    [jti],
    // Every MCP request asks it: planned once per connection (half of its cost).
    'confirm-token-live',
  );
  const row = rows[0];
  if (!row || row.user_id !== claims.sub) {
    throw unauthorized(origin, true, 'The access token was revoked or its account suspended');
  }
  return {
    token,
    userId: row.user_id,
    clientId: row.client_id ?? '',
    scopes: row.scopes,
    expiresAt: Number(claims.exp),
    resource,
    claims,
  };
}
