// PKCE (RFC 7636) with S256 only: OAuth 2.1 and the MCP authorization spec make it mandatory, and
// 001 §8 forbids `plain`.
import { createHash } from 'node:crypto';

/** RFC 7636 §4.1: 43-128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is always 43 characters. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function isWellFormedChallenge(challenge: string): boolean {
  return CHALLENGE.test(challenge);
}

export function isWellFormedVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier);
}

export function computeCodeChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
