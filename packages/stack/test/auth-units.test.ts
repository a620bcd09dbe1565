import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type AuthConfig, resolveRedirect } from '../src/auth/auth-config.ts';
import { AuthError, renderAuthError } from '../src/auth/auth-error.ts';
import { generateOtp, hashEmailOtp, verifyCodeChallenge } from '../src/auth/crypto.ts';
import { mergeMetadata } from '../src/auth/request.ts';

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
