// Verifies the JWT a Realtime client presents (socket apikey, join access_token, access_token
// pushes) and words failures as Supabase Realtime does (user_socket.ex handle_error).
import { errors, jwtVerify } from 'jose';

export type Claims = Record<string, unknown> & { role: string; exp: number };

export type TokenCheck = { ok: true; claims: Claims } | { ok: false; message: string };

export async function verifyRealtimeToken(
  token: string | null | undefined,
  secret: Uint8Array,
): Promise<TokenCheck> {
  if (!token) return { ok: false, message: 'API key is missing' };
  try {
    const { payload } = await jwtVerify(token, secret, { algorithms: ['HS256'] });
    if (typeof payload.role !== 'string' || typeof payload.exp !== 'number') {
      return { ok: false, message: 'Fields `role` and `exp` are required in JWT' };
    }
    return { ok: true, claims: payload as Claims };
  } catch (error) {
    if (error instanceof errors.JWTExpired) return { ok: false, message: 'Token has expired' };
    if (error instanceof errors.JWSSignatureVerificationFailed) {
      return { ok: false, message: 'Failed to validate JWT signature' };
    }
    return { ok: false, message: 'The token provided is not a valid JWT' };
  }
}

/**
 * Subscribers whose claims differ only in timing fields share one RLS check (docs/realtime.md
 * "Changes and RLS"); every other claim may matter to a policy and stays in the key.
 */
export function identityKey(claims: Claims): string {
  const { exp: _exp, iat: _iat, nbf: _nbf, jti: _jti, ...rest } = claims;
  return JSON.stringify(
    Object.keys(rest)
      .sort()
      .map((key) => [key, rest[key]]),
  );
}
