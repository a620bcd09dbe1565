// verify_mode hmac (000 §2.4, §4.1): signature = BASE64URL(HMAC-SHA256(secret, canonical(payload))),
// compared in constant time; iat within [now - 120 s, now + 30 s]; the jti is burned by the
// caller when the code is issued. A payload may also carry the /start request's code_challenge
// (reference A2; docs/federation.md "Verify modes"), which clients onboarded with
// hmac_binds_challenge require.
import { decodeBase64Url } from '../../_shared/federation/base64url.ts';
import { canonicalJson } from '../../_shared/federation/canonical-json.ts';
import { constantTimeEqual } from '../../_shared/federation/constant-time.ts';
import { BrokerError } from '../broker-error.ts';
import type { PartnerIdentity } from './partner-identity.ts';

export const IAT_MAX_AGE_SECONDS = 120;
export const IAT_MAX_SKEW_SECONDS = 30;
/** A jti must outlive the whole window in which its payload could still pass the iat check. */
const JTI_RETENTION_SECONDS = IAT_MAX_AGE_SECONDS + IAT_MAX_SKEW_SECONDS;

const REQUIRED_KEYS = ['email', 'iat', 'jti', 'sub'] as const;
/** 000 §2.4's four fields plus the challenge the assertion is bound to (sorted, as compared). */
const BOUND_KEYS = ['code_challenge', 'email', 'iat', 'jti', 'sub'] as const;

/** What binds an assertion to one PKCE pair: the client's setting and the /start challenge. */
export interface ChallengeBinding {
  /** The client's hmac_binds_challenge: the payload must carry code_challenge. */
  required: boolean;
  /** The code_challenge of the /start request the assertion came with. */
  codeChallenge: string;
}

export async function signHmacPayload(secret: string, payload: unknown): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign(
    'HMAC',
    key,
    new TextEncoder().encode(canonicalJson(payload)),
  );
  return new Uint8Array(mac);
}

/** 000 §8: the iat window, in whole seconds, both edges included. */
export function isIatWithinWindow(iat: number, nowMs: number): boolean {
  const now = Math.floor(nowMs / 1000);
  return iat >= now - IAT_MAX_AGE_SECONDS && iat <= now + IAT_MAX_SKEW_SECONDS;
}

export async function verifyHmacAssertion(
  payload: unknown,
  signature: string,
  secret: string,
  nowMs: number,
  binding: ChallengeBinding,
): Promise<PartnerIdentity> {
  // Reference A2: a flat object with exactly the known keys, so canonicalisation has one answer.
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new BrokerError('access_denied', 'hmac payload is not an object');
  }
  const record = payload as Record<string, unknown>;
  const keys = Object.keys(record).sort().join(',');
  const bound = keys === BOUND_KEYS.join(',');
  if (!bound && keys !== REQUIRED_KEYS.join(',')) {
    throw new BrokerError(
      'access_denied',
      'hmac payload keys are not exactly sub, email, iat, jti (and code_challenge)',
    );
  }
  // A bound client refuses the four-field payload. Any client refuses a payload bound to another
  // challenge, so a partner can sign the challenge before its client is switched to require it.
  if (binding.required && !bound) {
    throw new BrokerError('access_denied', 'hmac payload lacks code_challenge');
  }
  if (bound && record.code_challenge !== binding.codeChallenge) {
    throw new BrokerError('access_denied', 'hmac payload bound to another code_challenge');
  }
  const { sub, email, iat, jti } = record;
  if (
    typeof sub !== 'string' || sub.length === 0 || sub.length > 256 ||
    typeof email !== 'string' || email.length > 320 ||
    typeof iat !== 'number' || !Number.isSafeInteger(iat) ||
    typeof jti !== 'string' || jti.length === 0 || jti.length > 200
  ) {
    throw new BrokerError('access_denied', 'hmac payload field types');
  }
  // Only the canonical spelling of a 32-byte MAC is accepted (no padding, no standard alphabet).
  const presented = decodeBase64Url(signature);
  if (!presented || presented.length !== 32) {
    throw new BrokerError('access_denied', 'hmac signature encoding');
  }
  const expected = await signHmacPayload(secret, record);
  if (!constantTimeEqual(presented, expected)) {
    throw new BrokerError('access_denied', 'hmac signature mismatch');
  }
  if (!isIatWithinWindow(iat, nowMs)) {
    throw new BrokerError('access_denied', 'hmac iat outside the window');
  }
  return {
    sub,
    email,
    jti: { value: jti, expiresAt: new Date((iat + JTI_RETENTION_SECONDS) * 1000) },
  };
}
