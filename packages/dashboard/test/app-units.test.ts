// The app's pure helpers: sign-in messages, the magic-link problems read from the URL, the role
// picked for the home badge, and the runtime config check.
import { describe, expect, it } from 'vitest';
import { pickDisplayRole } from '../src/roles.ts';
import { parseRuntimeConfig } from '../src/runtime-config.ts';
import {
  describeLinkProblem,
  describeSignInFailure,
  isSilentMagicLinkRefusal,
} from '../src/sign-in-messages.ts';

describe('describeSignInFailure', () => {
  it.each([
    [{ code: 'invalid_credentials', status: 400 }, 'password', 'Wrong email or password.'],
    [{ code: 'email_not_confirmed', status: 400 }, 'password', /Confirm your email/],
    [{ code: 'over_email_send_rate_limit', status: 429 }, 'magic_link', /Too many emails/],
    [{ code: undefined, status: 429 }, 'password', /Too many attempts/],
    [{ code: undefined, status: 0 }, 'password', /cannot be reached/],
    [{ code: 'something_new', status: 500 }, 'password', 'Sign-in failed. Please try again.'],
    // Without a readable code (no CORS-exposed API version header), the status stands in.
    [{ code: undefined, status: 400 }, 'password', 'Wrong email or password.'],
    [{ code: undefined, status: 400 }, 'magic_link', 'Sign-in failed. Please try again.'],
  ] as const)('describes %j from %s sign-in', (failure, method, expected) => {
    expect(describeSignInFailure(failure, method)).toMatch(expected);
  });

  it('never repeats the server message', () => {
    const failure = { code: 'weird', status: 400, message: 'internal detail' };
    expect(describeSignInFailure(failure, 'password')).not.toContain('internal detail');
  });
});

describe('isSilentMagicLinkRefusal', () => {
  it.each([
    [{ code: 'otp_disabled', status: 422 }, true],
    [{ code: undefined, status: 422 }, true],
    [{ code: 'over_email_send_rate_limit', status: 429 }, false],
    [{ code: undefined, status: 500 }, false],
  ])('treats %j as an unknown address: %s (no account enumeration)', (failure, expected) => {
    expect(isSilentMagicLinkRefusal(failure)).toBe(expected);
  });
});

describe('describeLinkProblem', () => {
  it.each([
    ['a clean URL', 'https://d.example/sign-in?next=%2F', false, null],
    [
      'the auth error fragment',
      'https://d.example/sign-in?next=%2F#error=access_denied&error_code=otp_expired',
      false,
      /invalid or has expired/,
    ],
    ['a code left unexchanged', 'https://d.example/sign-in?next=%2F&code=abc', false, /browser/],
    ['a code once signed in', 'https://d.example/sign-in?next=%2F&code=abc', true, null],
  ])('reads %s', (_name, href, signedIn, expected) => {
    const problem = describeLinkProblem(href, signedIn);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toMatch(expected);
  });
});

describe('pickDisplayRole', () => {
  const member = { slug: 'member', name: 'Member', is_admin: false };
  const admin = { slug: 'admin', name: 'Administrator', is_admin: true };

  it.each([
    ['no rows', [], null],
    ['not an array', null, null],
    ['one role', [{ roles: member }], member],
    ['an admin role among others', [{ roles: member }, { roles: admin }], admin],
    ['an embedded array', [{ roles: [member] }], member],
    ['a row RLS emptied', [{ roles: null }], null],
    ['a malformed role', [{ roles: { slug: 'x' } }], null],
  ])('picks from %s', (_name, rows, expected) => {
    expect(pickDisplayRole(rows)).toEqual(expected);
  });
});

describe('parseRuntimeConfig', () => {
  const good = {
    supabaseUrl: 'http://127.0.0.1:54321/',
    supabasePublishableKey: 'sb_publishable_x',
    mcpUrl: 'https://mcp.example.com',
  };

  it('accepts http(s) URLs and drops a trailing slash', () => {
    expect(parseRuntimeConfig(good)).toEqual({ ...good, supabaseUrl: 'http://127.0.0.1:54321' });
  });

  it.each([
    ['a missing key', { ...good, supabasePublishableKey: '' }],
    ['a javascript: URL', { ...good, mcpUrl: 'javascript:alert(1)' }],
    ['a relative URL', { ...good, supabaseUrl: '/api' }],
    ['not an object', 'config'],
  ])('refuses %s', (_name, value) => {
    expect(() => parseRuntimeConfig(value)).toThrow();
  });
});
