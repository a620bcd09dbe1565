// Signed-URL tokens: HS256 JWTs with the project's secret, as storage-api makes them
// (src/internal/auth/jwt.ts signJWT): `{url: "<bucket>/<name>", scope}` for downloads, plus
// `owner` and `upsert` for uploads. Each token is bound to its object and its action, so a
// download token cannot be replayed as an upload and the other way round.
import { type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { storageErrors } from './storage-error.ts';

export type SignedScope = 'download' | 'upload';

export interface SignedClaims extends JWTPayload {
  url: string;
  scope?: SignedScope;
  owner?: string;
  upsert?: boolean;
}

function keyOf(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

export async function signObjectToken(
  claims: { url: string; scope: SignedScope; owner?: string; upsert?: boolean },
  secret: string,
  expiresInSeconds: number,
): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(`${Math.floor(expiresInSeconds)}s`)
    .sign(keyOf(secret));
}

/**
 * The claims of a token presented for `<bucket>/<name>` and `scope`. A token from before scopes
 * existed counts as an upload token when it carries `upsert` (storage-api isUploadScopedToken).
 */
export async function verifyObjectToken(
  token: string,
  secret: string,
  url: string,
  scope: SignedScope,
): Promise<SignedClaims> {
  let claims: SignedClaims;
  try {
    ({ payload: claims } = await jwtVerify<SignedClaims>(token, keyOf(secret), {
      algorithms: ['HS256'],
    }));
  } catch (error) {
    throw storageErrors.invalidJwt(error instanceof Error ? error.message : 'Invalid JWT');
  }
  const legacyUpload = claims.scope === undefined && 'upsert' in claims;
  const scoped =
    scope === 'upload'
      ? claims.scope === 'upload' || legacyUpload
      : claims.scope === 'download' || (claims.scope === undefined && !legacyUpload);
  if (!scoped) throw storageErrors.invalidSignature(`Token is not scoped for ${scope}`);
  if (typeof claims.url !== 'string' || claims.url !== url) throw storageErrors.invalidSignature();
  return claims;
}
