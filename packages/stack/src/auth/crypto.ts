// Token material of the auth service: access-token JWTs with GoTrue's claims, random refresh
// tokens and codes, e-mail OTPs, and the hashes GoTrue stores instead of raw tokens.
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { type JWTPayload, jwtVerify, SignJWT } from 'jose';

export interface AccessTokenClaims extends JWTPayload {
  sub: string;
  role: string;
  session_id?: string;
  email?: string;
  is_anonymous?: boolean;
}

export interface AmrEntry {
  method: string;
  timestamp: number;
}

export interface AccessTokenInput {
  issuer: string;
  userId: string;
  email: string;
  phone: string;
  role: string;
  appMetadata: Record<string, unknown>;
  userMetadata: Record<string, unknown>;
  sessionId: string;
  amr: AmrEntry[];
  isAnonymous: boolean;
  expiresInSeconds: number;
  now: number;
}

/** GoTrue's AccessTokenClaims (internal/tokens/service.go), HS256 with the project secret. */
export async function signAccessToken(
  input: AccessTokenInput,
  secret: string,
): Promise<{ token: string; expiresAt: number }> {
  const expiresAt = input.now + input.expiresInSeconds;
  const token = await new SignJWT({
    email: input.email,
    phone: input.phone,
    app_metadata: input.appMetadata,
    user_metadata: input.userMetadata,
    role: input.role,
    aal: 'aal1',
    amr: input.amr,
    session_id: input.sessionId,
    is_anonymous: input.isAnonymous,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(input.issuer)
    .setSubject(input.userId)
    .setAudience('authenticated')
    .setIssuedAt(input.now)
    .setExpirationTime(expiresAt)
    .sign(new TextEncoder().encode(secret));
  return { token, expiresAt };
}

/** Verifies an HS256 token signed with the project secret; throws jose's errors. */
export async function verifyProjectJwt(token: string, secret: string): Promise<AccessTokenClaims> {
  const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
    algorithms: ['HS256'],
  });
  return payload as AccessTokenClaims;
}

export function generateRefreshToken(): string {
  return randomBytes(16).toString('base64url');
}

export function generateOtp(length: number): string {
  return Array.from({ length }, () => randomInt(10)).join('');
}

/**
 * The stored hash of an e-mail OTP, also the `token_hash` of its link: hex HMAC-SHA-224 of the
 * address followed by the OTP, keyed with a key derived from the project secret. GoTrue's
 * GenerateTokenHash is the plain SHA-224 of the same input, which anyone knowing the address can
 * compute for every possible code and try as a `token_hash` with no per-account limit; keyed, a
 * token hash cannot be guessed and typed codes go through the per-account guard. Same length and
 * alphabet, so clients see no difference.
 */
export function hashEmailOtp(secret: string, email: string, otp: string): string {
  const key = createHmac('sha256', secret).update('auth: e-mail OTP hash key').digest();
  return createHmac('sha224', key)
    .update(email + otp)
    .digest('hex');
}

/** RFC 7636 §4.6 S256 (or plain) check of a PKCE verifier against the stored challenge. */
export function verifyCodeChallenge(verifier: string, challenge: string, method: 's256' | 'plain') {
  const computed =
    method === 's256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  const a = Buffer.from(computed);
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}
