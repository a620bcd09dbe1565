// The hand-off link both ways (000 §4.2): the partner builds it, the companion parses it. Code in
// the query, verifier only in the fragment `fed_verifier`; custom scheme, alias and universal link.
import { describe, expect, it } from 'vitest';
import { buildHandoffLink, createCodeVerifier, parseHandoffLink } from '../src/index.ts';
import { RFC7636_VERIFIER } from './helpers/rfc7636.ts';

const config = {
  schemes: ['com.example.companion', 'companion-alias'],
  appLinkBase: 'https://app.example.com',
};
const CODE = 'c0de_-.~AbC';

describe('buildHandoffLink', () => {
  it('puts the code in the query and the verifier only in the fragment of a custom-scheme link', () => {
    const link = buildHandoffLink({
      target: 'ios',
      code: CODE,
      code_verifier: RFC7636_VERIFIER,
      appScheme: 'com.example.companion',
    });
    expect(link).toBe(
      `com.example.companion://auth/federation?code=${CODE}#fed_verifier=${RFC7636_VERIFIER}`,
    );
    const url = new URL(link);
    expect(url.search).not.toContain(RFC7636_VERIFIER);
  });

  it('builds the universal link under {app_link_base}/app/auth/federation', () => {
    const link = buildHandoffLink({
      target: 'universal',
      code: CODE,
      code_verifier: RFC7636_VERIFIER,
      appLinkBase: 'https://app.example.com/',
    });
    expect(link).toBe(
      `https://app.example.com/app/auth/federation?code=${CODE}#fed_verifier=${RFC7636_VERIFIER}`,
    );
  });

  it('URL-encodes both values (000 §4.2)', () => {
    const link = buildHandoffLink({
      target: 'ios',
      code: 'a b&c=d#e',
      code_verifier: RFC7636_VERIFIER,
      appScheme: 'companion-alias',
    });
    expect(link).toBe(
      `companion-alias://auth/federation?code=a%20b%26c%3Dd%23e#fed_verifier=${RFC7636_VERIFIER}`,
    );
    expect(parseHandoffLink(link, config).code).toBe('a b&c=d#e');
  });

  it.each([
    ['ios without a scheme', { target: 'ios' as const }],
    ['ios with https as the scheme', { target: 'ios' as const, appScheme: 'https' }],
    ['ios with an invalid scheme', { target: 'ios' as const, appScheme: '1bad scheme' }],
    ['universal without a base', { target: 'universal' as const }],
    [
      'universal over plain http to a public host',
      { target: 'universal' as const, appLinkBase: 'http://app.example.com' },
    ],
    [
      'universal with a query in the base',
      { target: 'universal' as const, appLinkBase: 'https://app.example.com/?x=1' },
    ],
    ['an unknown target', { target: 'android' as unknown as 'ios', appScheme: 'companion' }],
  ])('refuses %s', (_, parts) => {
    expect(() =>
      buildHandoffLink({ code: CODE, code_verifier: RFC7636_VERIFIER, ...parts }),
    ).toThrow(expect.objectContaining({ name: 'HandoffError', code: 'invalid_options' }));
  });
});

describe('parseHandoffLink', () => {
  it.each([
    ['the custom scheme', `com.example.companion://auth/federation?code=${CODE}`, 'scheme'],
    ['the alias scheme', `companion-alias://auth/federation?code=${CODE}`, 'scheme'],
    ['the scheme in upper case', `COM.EXAMPLE.COMPANION://auth/federation?code=${CODE}`, 'scheme'],
    ['the universal link', `https://app.example.com/app/auth/federation?code=${CODE}`, 'universal'],
    [
      'the universal link with a trailing slash',
      `https://app.example.com/app/auth/federation/?code=${CODE}`,
      'universal',
    ],
  ])('accepts %s', (_, prefix, form) => {
    expect(parseHandoffLink(`${prefix}#fed_verifier=${RFC7636_VERIFIER}`, config)).toEqual({
      code: CODE,
      code_verifier: RFC7636_VERIFIER,
      form,
    });
  });

  it('round-trips every link the partner side builds', () => {
    for (const target of ['ios', 'universal'] as const) {
      const code_verifier = createCodeVerifier();
      const link = buildHandoffLink({
        target,
        code: CODE,
        code_verifier,
        appScheme: 'com.example.companion',
        appLinkBase: config.appLinkBase,
      });
      expect(parseHandoffLink(link, config)).toMatchObject({ code: CODE, code_verifier });
    }
  });

  const V = `#fed_verifier=${RFC7636_VERIFIER}`;
  it.each([
    ['not a URL', 'not a link'],
    ['an unknown scheme', `evil://auth/federation?code=${CODE}${V}`],
    ['the wrong host', `com.example.companion://login/federation?code=${CODE}${V}`],
    ['the wrong path', `com.example.companion://auth/other?code=${CODE}${V}`],
    ['another universal host', `https://evil.example.com/app/auth/federation?code=${CODE}${V}`],
    ['the universal link over http', `http://app.example.com/app/auth/federation?code=${CODE}${V}`],
    ['the wrong universal path', `https://app.example.com/auth/federation?code=${CODE}${V}`],
    ['credentials in the URL', `https://u:p@app.example.com/app/auth/federation?code=${CODE}${V}`],
    ['no code', `com.example.companion://auth/federation${V}`],
    ['an empty code', `com.example.companion://auth/federation?code=${V}`],
    ['two codes', `com.example.companion://auth/federation?code=a&code=b${V}`],
    ['an oversized code', `com.example.companion://auth/federation?code=${'a'.repeat(513)}${V}`],
    ['no fragment', `com.example.companion://auth/federation?code=${CODE}`],
    ['another fragment key', `com.example.companion://auth/federation?code=${CODE}#verifier=x`],
    [
      'two verifiers',
      `com.example.companion://auth/federation?code=${CODE}${V}&fed_verifier=${RFC7636_VERIFIER}`,
    ],
    ['a short verifier', `com.example.companion://auth/federation?code=${CODE}#fed_verifier=abc`],
    [
      'a verifier outside the unreserved set',
      `com.example.companion://auth/federation?code=${CODE}#fed_verifier=${'a'.repeat(42)}%2B`,
    ],
  ])('refuses a link with %s as malformed_link', (_, link) => {
    expect(() => parseHandoffLink(link, config)).toThrow(
      expect.objectContaining({ name: 'CompanionHandoffError', code: 'malformed_link' }),
    );
  });

  it('refuses a link whose verifier travelled in the query (000 §1 rule 2)', () => {
    const link = `https://app.example.com/app/auth/federation?code=${CODE}&fed_verifier=${RFC7636_VERIFIER}`;
    expect(() => parseHandoffLink(link, config)).toThrow(
      expect.objectContaining({ code: 'verifier_exposed' }),
    );
  });

  it('keeps the code and the verifier out of its error messages', () => {
    const secret = createCodeVerifier();
    try {
      parseHandoffLink(`evil://auth/federation?code=topsecretcode#fed_verifier=${secret}`, config);
      expect.unreachable();
    } catch (error) {
      expect(String(error)).not.toContain(secret);
      expect(String(error)).not.toContain('topsecretcode');
    }
  });
});
