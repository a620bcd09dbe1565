// The partner backend's signer (000 §2.4, §4.1) with the binding to the PKCE challenge
// (docs/federation.md "Verify modes"): an unbound payload stays the four fields, a bound one
// carries the challenge under the signature, and a value that is not an S256 challenge is refused
// before anything is signed.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, createHmacPayload, signHmacPayload } from '../src/index.ts';
import { RFC7636_CHALLENGE } from './helpers/rfc7636.ts';

const user = { sub: 'partner-user-1', email: 'user@example.com' };

describe('createHmacPayload', () => {
  it('makes exactly the four fields of 000 §2.4 without a challenge', () => {
    const payload = createHmacPayload(user, { now: 1_800_000_000_900 });
    expect(Object.keys(payload).sort()).toEqual(['email', 'iat', 'jti', 'sub']);
    expect(payload.iat).toBe(1_800_000_000);
  });

  it('binds the challenge under the signature', async () => {
    const payload = createHmacPayload(user, { codeChallenge: RFC7636_CHALLENGE });
    expect(payload.code_challenge).toBe(RFC7636_CHALLENGE);
    const { signature } = await signHmacPayload('s3cret', payload);
    const expected = createHmac('sha256', 's3cret')
      .update(canonicalJson(payload))
      .digest('base64url');
    expect(signature).toBe(expected);
    expect(canonicalJson(payload)).toContain(`"code_challenge":"${RFC7636_CHALLENGE}"`);
  });

  it.each([
    ['a plain verifier-length string', 'x'.repeat(42)],
    ['padding', `${RFC7636_CHALLENGE.slice(0, 42)}=`],
    ['the standard alphabet', `${RFC7636_CHALLENGE.slice(0, 42)}+`],
    ['an empty string', ''],
  ])('refuses %s as a challenge', (_name, codeChallenge) => {
    expect(() => createHmacPayload(user, { codeChallenge })).toThrowError(
      expect.objectContaining({ name: 'HandoffError', code: 'invalid_options' }),
    );
  });
});
