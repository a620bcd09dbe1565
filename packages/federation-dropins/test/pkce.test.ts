// PKCE of the partner helper (000 §2.1, RFC 7636): the Appendix B vector, random verifiers against
// node:crypto, and the pure SHA-256 used where WebCrypto is missing (React Native).
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  computeCodeChallenge,
  createCodeVerifier,
  createPkcePair,
  encodeBase64Url,
  HandoffError,
  sha256,
} from '../src/index.ts';
import { RFC7636_CHALLENGE, RFC7636_OCTETS, RFC7636_VERIFIER } from './helpers/rfc7636.ts';

const nodeChallenge = (verifier: string) =>
  createHash('sha256').update(verifier, 'ascii').digest('base64url');
const pureSha256 = async (bytes: Uint8Array) => sha256(bytes);

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('the RFC 7636 Appendix B vector', () => {
  it('encodes the appendix octets to the appendix verifier', () => {
    expect(encodeBase64Url(new Uint8Array(RFC7636_OCTETS))).toBe(RFC7636_VERIFIER);
  });

  it('derives the appendix challenge with WebCrypto', async () => {
    expect(await computeCodeChallenge(RFC7636_VERIFIER)).toBe(RFC7636_CHALLENGE);
  });

  it('derives the appendix challenge with the pure SHA-256 when WebCrypto is missing', async () => {
    vi.stubGlobal('crypto', undefined);
    expect(await computeCodeChallenge(RFC7636_VERIFIER)).toBe(RFC7636_CHALLENGE);
  });
});

describe('random verifiers', () => {
  it('mints 43-character base64url verifiers from 32 random bytes', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const verifier = createCodeVerifier();
      expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
      seen.add(verifier);
    }
    expect(seen.size).toBe(200);
  });

  it('gives challenges byte-identical to node:crypto for 200 random pairs', async () => {
    for (let i = 0; i < 200; i++) {
      const pair = await createPkcePair();
      expect(pair.code_challenge_method).toBe('S256');
      expect(pair.code_challenge).toBe(nodeChallenge(pair.code_verifier));
      expect(pair.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });

  it.each([43, 64, 100, 128])(
    'hashes the ASCII of a %i-character verifier from the whole unreserved set',
    async (length) => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';
      const bytes = randomBytes(length);
      const verifier = Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
      expect(await computeCodeChallenge(verifier)).toBe(nodeChallenge(verifier));
      expect(await computeCodeChallenge(verifier, { sha256: pureSha256 })).toBe(
        nodeChallenge(verifier),
      );
    },
  );

  it('uses an injected random source, as react-native-get-random-values provides', () => {
    const getRandomValues = vi.fn((bytes: Uint8Array) => bytes.fill(0xff));
    expect(createCodeVerifier({ getRandomValues })).toBe(
      Buffer.alloc(32, 0xff).toString('base64url'),
    );
    expect(getRandomValues).toHaveBeenCalledOnce();
  });
});

describe('the pure SHA-256', () => {
  it('matches node:crypto on every length around the block and padding boundaries', () => {
    for (let length = 0; length <= 200; length++) {
      const input = randomBytes(length);
      expect(Buffer.from(sha256(input)).toString('hex')).toBe(
        createHash('sha256').update(input).digest('hex'),
      );
    }
  });
});

describe('verifier syntax (RFC 7636 §4.1)', () => {
  it.each([
    ['42 characters', 'a'.repeat(42)],
    ['129 characters', 'a'.repeat(129)],
    ['a plus sign', `${'a'.repeat(42)}+`],
    ['a slash', `${'a'.repeat(42)}/`],
    ['padding', `${'a'.repeat(42)}=`],
    ['a space', `${'a'.repeat(42)} `],
    ['a non-ASCII letter', `${'a'.repeat(42)}é`],
  ])('refuses a verifier with %s', async (_, verifier) => {
    await expect(computeCodeChallenge(verifier)).rejects.toMatchObject({
      name: 'HandoffError',
      code: 'invalid_options',
    });
  });

  it('refuses to mint a verifier without a CSPRNG rather than fall back to Math.random', () => {
    vi.stubGlobal('crypto', undefined);
    expect(() => createCodeVerifier()).toThrow(HandoffError);
    expect(() => createCodeVerifier()).toThrow(/react-native-get-random-values/);
  });
});
