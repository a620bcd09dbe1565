// Unit tests for the broker's pure parts: PKCE S256, canonical JSON, base64url, constant-time
// comparison and e-mail normalisation. No network, no clock.
import { deepStrictEqual as assertEquals, ok as assert } from 'node:assert/strict';

const assertFalse = (value: boolean) => assert(!value);
import { decodeBase64Url, encodeBase64Url } from './base64url.ts';
import { canonicalJson } from './canonical-json.ts';
import { constantTimeEqual } from './constant-time.ts';
import { normalizeEmail, syntheticEmail } from './email-normalization.ts';
import { computeCodeChallenge, isValidCodeChallenge, isValidCodeVerifier } from './pkce.ts';

Deno.test('PKCE S256 matches the RFC 7636 appendix B vector', async () => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  assertEquals(await computeCodeChallenge(verifier), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
});

Deno.test('verifiers are 43-128 characters of the RFC 7636 alphabet', () => {
  assert(isValidCodeVerifier('a'.repeat(43)));
  assert(isValidCodeVerifier('A-._~'.repeat(20).slice(0, 128)));
  assertFalse(isValidCodeVerifier('a'.repeat(42)));
  assertFalse(isValidCodeVerifier('a'.repeat(129)));
  assertFalse(isValidCodeVerifier(`${'a'.repeat(43)}+`));
});

Deno.test('challenges are exactly 43 base64url characters', () => {
  assert(isValidCodeChallenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  assertFalse(isValidCodeChallenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM='));
  assertFalse(isValidCodeChallenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM'));
});

Deno.test('canonical JSON sorts keys at every depth and drops undefined', () => {
  assertEquals(
    canonicalJson({ sub: 'u', email: 'e', iat: 1, jti: 'j', extra: undefined }),
    '{"email":"e","iat":1,"jti":"j","sub":"u"}',
  );
  assertEquals(
    canonicalJson({ b: { d: 1, c: [2, { f: 1, e: 0 }] }, a: null }),
    '{"a":null,"b":{"c":[2,{"e":0,"f":1}],"d":1}}',
  );
  assertEquals(canonicalJson('é'), '"é"');
});

Deno.test('base64url decoding accepts only the canonical spelling', () => {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const text = encodeBase64Url(bytes);
  assertEquals(decodeBase64Url(text), bytes);
  assertEquals(decodeBase64Url(`${text}=`), undefined);
  assertEquals(decodeBase64Url(text.replace(/-/g, '+')), text.includes('-') ? undefined : bytes);
  // The 43rd character of a 32-byte value carries 2 unused bits; setting them is another spelling.
  const last = text.at(-1) as string;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const twin = alphabet[alphabet.indexOf(last) ^ 1] as string;
  assertEquals(decodeBase64Url(text.slice(0, -1) + twin), undefined);
});

Deno.test('constantTimeEqual compares whole byte strings', () => {
  const a = new Uint8Array([1, 2, 3, 4]);
  assert(constantTimeEqual(a, new Uint8Array([1, 2, 3, 4])));
  assertFalse(constantTimeEqual(a, new Uint8Array([1, 2, 3, 5])));
  assertFalse(constantTimeEqual(a, new Uint8Array([9, 2, 3, 4])));
  assertFalse(constantTimeEqual(a, new Uint8Array([1, 2, 3])));
  assert(constantTimeEqual(new Uint8Array(), new Uint8Array()));
});

Deno.test('e-mails normalise to trimmed lower-case ASCII; look-alikes are unusable', () => {
  assertEquals(normalizeEmail('  Victim@Example.COM '), 'victim@example.com');
  assertEquals(normalizeEmail('first.last+tag@example.com'), 'first.last+tag@example.com');
  assertEquals(normalizeEmail('\u212aelly@example.com'), undefined); // Kelvin sign
  assertEquals(normalizeEmail('v\u0131ctim@example.com'), undefined); // dotless i
  assertEquals(normalizeEmail('\uff56ictim@example.com'), undefined); // fullwidth v
  assertEquals(normalizeEmail('vic\u200btim@example.com'), undefined); // zero-width space
  assertEquals(normalizeEmail('victim@exämple.com'), undefined);
  assertEquals(normalizeEmail('victim@example.com.'), undefined); // trailing root dot
  assertEquals(normalizeEmail('victim@example..com'), undefined);
  assertEquals(normalizeEmail('victim\n@example.com'), undefined);
  assertEquals(normalizeEmail('not-an-address'), undefined);
  assertEquals(normalizeEmail(undefined), undefined);
  assertEquals(
    normalizeEmail(syntheticEmail('svc_acme', 'abc')),
    'fed.svc_acme.abc@federated.invalid',
  );
});
