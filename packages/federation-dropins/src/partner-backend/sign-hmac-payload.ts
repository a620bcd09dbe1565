// Partner-backend side of verify mode `hmac` (000 §2.4, §4.1): canonical JSON of the payload and
// its HMAC-SHA256 signature. Runs on the partner's server (Node, Deno, workers), never on a device.
import { encodeBase64Url, HandoffError, type HmacPayload } from '../partner/federation-handoff.ts';

/** 000 §4.1: JSON with keys sorted and undefined values dropped, at every depth. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * 000 §4.1: signature = BASE64URL(HMAC-SHA256(client_secret, canonical(payload))). The key is the
 * secret string's UTF-8 bytes, as `mint_hmac_secret` returned it (000 §2.2).
 */
export async function signHmacPayload(
  clientSecret: string,
  payload: HmacPayload,
): Promise<{ payload: HmacPayload; signature: string }> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(clientSecret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, encoder.encode(canonicalJson(payload)));
  return { payload, signature: encodeBase64Url(new Uint8Array(mac)) };
}

// RFC 7636 §4.2: BASE64URL(SHA256(...)) without padding is always 43 characters.
const CODE_CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * 000 §2.4: a fresh payload, `iat` now in whole seconds and a random single-use `jti`. Pass the
 * device's `codeChallenge` (what `credentialFromPartnerBackend` posts) to bind the assertion to
 * that PKCE pair, as clients onboarded with `hmac_binds_challenge` require.
 */
export function createHmacPayload(
  user: { sub: string; email: string },
  options: { now?: number; codeChallenge?: string } = {},
): HmacPayload {
  const { now = Date.now(), codeChallenge } = options;
  if (codeChallenge !== undefined && !CODE_CHALLENGE_PATTERN.test(codeChallenge)) {
    throw new HandoffError(
      'invalid_options',
      'codeChallenge is not an S256 code challenge (43 base64url characters, RFC 7636 §4.2)',
    );
  }
  return {
    sub: user.sub,
    email: user.email,
    iat: Math.floor(now / 1000),
    jti: crypto.randomUUID(),
    // Without a challenge the payload is exactly 000 §2.4's four fields.
    ...(codeChallenge === undefined ? {} : { code_challenge: codeChallenge }),
  };
}
