// base64url without padding (RFC 4648 §5), the encoding of PKCE values (RFC 7636 §3) and of the
// HMAC signature (000 §4.1).

export function encodeBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Strict decode: only the URL-safe alphabet, no padding; undefined for anything else. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
  // A non-canonical final character (unused low bits set) would give a second spelling.
  return encodeBase64Url(bytes) === text ? bytes : undefined;
}
