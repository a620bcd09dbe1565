// Fingerprints of secrets: the first 4 bytes of HMAC-SHA256(key, secret) as 8 hex characters,
// with WebCrypto so Node and Deno compute the same. The key keeps short secrets (passwords, PINs)
// from being recovered by hashing guesses; equal secrets under one key share a fingerprint.

/** Below this a key is too easy to guess for the fingerprint to protect short secrets. */
export const MIN_KEY_BYTES = 16;

const encoder = new TextEncoder();

/** WebCrypto's CryptoKey, named without the global type (Node's types declare it as a value). */
export type FingerprintKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** Imports the HMAC key once; throws TypeError for a missing or short key (a setup error). */
export function importFingerprintKey(key: Uint8Array): Promise<FingerprintKey> {
  if (!(key instanceof Uint8Array) || key.byteLength < MIN_KEY_BYTES) {
    return Promise.reject(
      new TypeError(`the redaction key must be a Uint8Array of at least ${MIN_KEY_BYTES} bytes`),
    );
  }
  // A copy: the caller may reuse or wipe its buffer, and WebCrypto wants an ArrayBuffer view.
  const raw = new Uint8Array(key);
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/** Computes the fingerprint of every secret, in parallel; the map is keyed by the secret. */
export async function fingerprintSecrets(
  secrets: Iterable<string>,
  key: FingerprintKey,
): Promise<Map<string, string>> {
  const distinct = [...new Set(secrets)];
  const prints = await Promise.all(distinct.map((secret) => fingerprint(secret, key)));
  return new Map(distinct.map((secret, index) => [secret, prints[index] ?? '']));
}

async function fingerprint(secret: string, key: FingerprintKey): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(secret)));
  let hex = '';
  for (const byte of mac.subarray(0, 4)) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
