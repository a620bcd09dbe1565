// PKCE S256 (RFC 7636 §4.1-4.2, 000 §2.1): the verifier's shape and the challenge derived from it.
import { encodeBase64Url } from './base64url.ts';

/** RFC 7636 §4.1: 43-128 characters of [A-Z a-z 0-9 - . _ ~]. */
export function isValidCodeVerifier(verifier: string): boolean {
  return /^[A-Za-z0-9._~-]{43,128}$/.test(verifier);
}

/** An S256 challenge is the base64url of a SHA-256 digest: exactly 43 characters. */
export function isValidCodeChallenge(challenge: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(challenge);
}

/** 000 §2.1: BASE64URL(SHA256(ASCII(code_verifier))), hashing the verifier string itself. */
export async function computeCodeChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return encodeBase64Url(new Uint8Array(digest));
}
