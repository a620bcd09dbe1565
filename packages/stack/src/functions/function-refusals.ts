// What the functions relay answers on its own, before or instead of a function: hosted Supabase's
// shapes, `{code, message}` with the code repeated in `sb-error-code` (docs/local-stack.md
// "Functions"). Decisions only; the gateway's router sends them.
import { decodeProtectedHeader, jwtVerify } from 'jose';

export interface FunctionRefusal {
  status: number;
  /** Hosted's error code, sent as `code` and as the `sb-error-code` header. */
  code: string;
  message: string;
}

export const FUNCTION_NOT_FOUND: FunctionRefusal = {
  status: 404,
  code: 'NOT_FOUND',
  message: 'Requested function was not found',
};

export const FUNCTION_BOOT_ERROR: FunctionRefusal = {
  status: 503,
  code: 'BOOT_ERROR',
  message: 'Function failed to start (please check logs)',
};

function unauthorized(code: string, message = 'Invalid JWT'): FunctionRefusal {
  return { status: 401, code: `UNAUTHORIZED_${code}`, message };
}

/** The token of `Bearer <token>`: two words, the scheme in any case (RFC 9110 §11.1). */
function bearerToken(authorization: string): string | undefined {
  const [scheme, token, ...rest] = authorization.trim().split(/\s+/);
  return scheme?.toLowerCase() === 'bearer' && token && rest.length === 0 ? token : undefined;
}

/**
 * The `verify_jwt` check. As on hosted Supabase the code names what the token claims to be, never
 * why it failed: a legacy (HS256) token with a bad signature and an expired one both answer
 * UNAUTHORIZED_LEGACY_JWT. The stack signs with its HS256 secret only (its JWKS is empty), so an
 * ES256 or RS256 token is never valid here.
 */
export async function checkFunctionJwt(
  authorization: string | undefined,
  jwtSecret: string,
): Promise<FunctionRefusal | undefined> {
  if (!authorization) return unauthorized('NO_AUTH_HEADER', 'Missing authorization header');
  const token = bearerToken(authorization);
  if (!token) return unauthorized('INVALID_JWT_FORMAT', "Auth header is not 'Bearer {token}'");
  let algorithm: string | undefined;
  try {
    algorithm = decodeProtectedHeader(token).alg;
  } catch {
    return unauthorized('INVALID_JWT_FORMAT');
  }
  if (!algorithm) return unauthorized('INVALID_JWT_FORMAT');
  if (algorithm === 'ES256' || algorithm === 'RS256') return unauthorized('ASYMMETRIC_JWT');
  if (algorithm !== 'HS256') {
    return unauthorized('UNSUPPORTED_TOKEN_ALGORITHM', `Unsupported JWT algorithm ${algorithm}`);
  }
  try {
    await jwtVerify(token, new TextEncoder().encode(jwtSecret), { algorithms: ['HS256'] });
    return undefined;
  } catch {
    return unauthorized('LEGACY_JWT');
  }
}
