// Hand-off codes (000 §2.3): 256 CSPRNG bits (RFC 6749 §10.10 asks for at least 128), sent once
// and stored only as their SHA-256.
import { encodeBase64Url } from '../_shared/federation/base64url.ts';

export function mintHandoffCode(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)));
}

export function isWellFormedHandoffCode(code: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(code);
}

export async function hashHandoffCode(code: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest('SHA-256', new TextEncoder().encode(code)),
  );
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
