import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type AuthConfig,
  DEFAULT_ACCOUNT_GUARDS,
  resolveRedirect,
} from '../src/auth/auth-config.ts';
import { AuthError, renderAuthError } from '../src/auth/auth-error.ts';
import { generateOtp, hashEmailOtp, verifyCodeChallenge } from '../src/auth/crypto.ts';
import { PasswordThrottle } from '../src/auth/password-throttle.ts';
import { mergeMetadata } from '../src/auth/request.ts';
import { TokenBucketLimiter } from '../src/auth/token-bucket.ts';

const config = {
  siteUrl: 'http://127.0.0.1:3000',
  redirectAllowList: ['http://127.0.0.1:3000/**', 'https://*.example.com/callback'],
} as AuthConfig;

describe('auth helpers', () => {
  it('accepts the RFC 7636 appendix B verifier and refuses another', () => {
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    expect(
      verifyCodeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', challenge, 's256'),
    ).toBe(true);
    expect(
      verifyCodeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX', challenge, 's256'),
    ).toBe(false);
  });

  it('hashes an e-mail OTP keyed with the secret: GoTrue shape, not its guessable SHA-224', () => {
    const secret = 'super-secret-jwt-token-with-at-least-32-characters-long';
    const hash = hashEmailOtp(secret, 'a@example.com', '123456');
    expect(hash).toMatch(/^[0-9a-f]{56}$/);
    expect(hash).not.toBe(hashEmailOtp(secret, 'b@example.com', '123456'));
    expect(hash).not.toBe(hashEmailOtp(`${secret}-other`, 'a@example.com', '123456'));
    // Anyone knowing the address can compute GoTrue's plain SHA-224 for every code.
    expect(hash).not.toBe(createHash('sha224').update('a@example.com123456').digest('hex'));
  });

  it('generates numeric OTPs of the configured length', () => {
    expect(generateOtp(6)).toMatch(/^\d{6}$/);
    expect(generateOtp(8)).toMatch(/^\d{8}$/);
  });

  it.each([
    [undefined, 'http://127.0.0.1:3000'],
    ['http://127.0.0.1:3000/welcome', 'http://127.0.0.1:3000/welcome'],
    ['https://app.example.com/callback', 'https://app.example.com/callback'],
    ['https://evil.test/steal', 'http://127.0.0.1:3000'],
    ['https://a.b.example.com/callback', 'http://127.0.0.1:3000'],
    ['http://127.0.0.1:3000.evil.test/', 'http://127.0.0.1:3000'],
    ['not a url', 'http://127.0.0.1:3000'],
  ])('resolves redirect_to %s to %s', (requested, expected) => {
    expect(resolveRedirect(config, requested)).toBe(expected);
  });

  it('merges metadata with null deleting a key', () => {
    expect(mergeMetadata({ a: 1, b: 2 }, { b: null, c: 3 })).toEqual({ a: 1, c: 3 });
  });

  it('renders the 2024-01-01 error shape only when the client asks for it', async () => {
    const error = new AuthError(400, 'invalid_credentials', 'Invalid login credentials');
    const versioned = renderAuthError(error, '2024-01-01');
    expect(await versioned.json()).toEqual({
      code: 'invalid_credentials',
      message: 'Invalid login credentials',
    });
    expect(versioned.headers.get('x-supabase-api-version')).toBe('2024-01-01');
    const legacy = renderAuthError(error, undefined);
    expect(await legacy.json()).toEqual({
      code: 400,
      error_code: 'invalid_credentials',
      msg: 'Invalid login credentials',
    });
    expect(legacy.headers.get('x-sb-error-code')).toBe('invalid_credentials');
  });
});

describe('request buckets and the password slow-down (injected clock)', () => {
  it('starts a bucket full, refills it at the rate and forgets it after the TTL', () => {
    const bucket = new TokenBucketLimiter(0.1, 3, 3600_000);
    const t = 1_000_000;
    for (let i = 0; i < 3; i += 1) expect(bucket.take('a', t).allowed).toBe(true);
    expect(bucket.take('a', t)).toEqual({ allowed: false, retryAfterSeconds: 10 });
    expect(bucket.take('b', t).allowed).toBe(true);
    expect(bucket.take('a', t + 9_000).allowed).toBe(false);
    expect(bucket.take('a', t + 10_000).allowed).toBe(true);
    expect(bucket.take('a', t + 10_000 + 3600_001).allowed).toBe(true);
  });

  /** 429s a try throws, or 'tried' when it was admitted (and then failed). */
  function attempt(throttle: PasswordThrottle, address: string, at: number): string {
    try {
      throttle.begin('victim@example.com', address, at);
      return 'tried';
    } catch (error) {
      return String((error as { status: number }).status);
    }
  }

  it('doubles the wait per failure from one address up to the maximum, then forgets', () => {
    const throttle = new PasswordThrottle(DEFAULT_ACCOUNT_GUARDS);
    let t = 5_000_000;
    for (let i = 0; i < 5; i += 1) expect(attempt(throttle, 'a', t)).toBe('tried');
    expect(attempt(throttle, 'a', t)).toBe('429');
    const waits: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      let wait = 0;
      while (attempt(throttle, 'a', t + wait) !== 'tried') wait += 500;
      waits.push(wait / 1000);
      t += wait;
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    // Fifteen quiet minutes later it starts again with free tries.
    expect(attempt(throttle, 'a', t + 900_001)).toBe('tried');
  });

  it('admits one of many parallel tries when a slot opens', () => {
    const throttle = new PasswordThrottle(DEFAULT_ACCOUNT_GUARDS);
    const t = 9_000_000;
    const first = Array.from({ length: 8 }, () => attempt(throttle, 'a', t));
    expect(first.filter((result) => result === 'tried')).toHaveLength(5);
    const later = Array.from({ length: 8 }, () => attempt(throttle, 'a', t + 1000));
    expect(later.filter((result) => result === 'tried')).toHaveLength(1);
  });

  it('lets a familiar address past the gate strangers share, until it is no longer familiar', () => {
    const throttle = new PasswordThrottle(DEFAULT_ACCOUNT_GUARDS);
    const t = 20_000_000;
    expect(attempt(throttle, 'home', t)).toBe('tried');
    throttle.succeeded('victim@example.com', 'home', t);
    for (let i = 0; i < 20; i += 1) expect(attempt(throttle, `stranger-${i}`, t + 1)).toBe('tried');
    expect(attempt(throttle, 'stranger-new', t + 2)).toBe('429');
    expect(attempt(throttle, 'home', t + 2)).toBe('tried');
    // Thirty days on, "home" is a stranger like any other while the guessing goes on.
    const month = 30 * 24 * 3600_000;
    for (let i = 0; i < 20; i += 1) attempt(throttle, `later-${i}`, t + month + 10);
    expect(attempt(throttle, 'home', t + month + 11)).toBe('429');
  });
});
