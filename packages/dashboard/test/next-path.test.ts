// The return-path gate (001 §3: "the return path is validated to the consent route only"): every
// value that is not exactly `/` or `/mcp/consent?rid=<rid>` becomes `/`.
import { describe, expect, it } from 'vitest';
import {
  consentPath,
  isValidRid,
  readNextPath,
  signInPath,
  validateNextPath,
} from '../src/next-path.ts';

const RID = 'r1d_0123456789-abcdef';

describe('validateNextPath', () => {
  it.each([
    ['/', '/'],
    [`/mcp/consent?rid=${RID}`, `/mcp/consent?rid=${RID}`],
    [`/mcp/consent?rid=${'a'.repeat(16)}`, `/mcp/consent?rid=${'a'.repeat(16)}`],
    [`/mcp/consent?rid=${'Z'.repeat(128)}`, `/mcp/consent?rid=${'Z'.repeat(128)}`],
  ])('keeps the allowed path %s', (input, expected) => {
    expect(validateNextPath(input)).toBe(expected);
  });

  it.each([
    ['a protocol-relative URL', '//evil.com'],
    ['a protocol-relative URL with a path', '//evil.com/mcp/consent?rid=0123456789abcdef'],
    ['an absolute URL', 'https://evil.com'],
    ['an absolute URL to the consent path', `https://evil.com/mcp/consent?rid=${RID}`],
    ['a backslash host', '/\\evil.com'],
    ['a double backslash', '\\\\evil.com'],
    ['a javascript: URL', 'javascript:alert(1)'],
    ['a JavaScript: URL in mixed case', 'JaVaScRiPt:alert(1)'],
    ['a data: URL', 'data:text/html,<script>alert(1)</script>'],
    ['an encoded protocol-relative URL', '%2F%2Fevil.com'],
    ['a half-encoded protocol-relative URL', '/%2Fevil.com'],
    ['an encoded backslash', '/%5Cevil.com'],
    ['a double-encoded slash', '%252F%252Fevil.com'],
    ['a tab inside //', '/\t/evil.com'],
    ['a newline inside //', '/\n/evil.com'],
    ['a leading space', ' /'],
    ['a trailing space', '/ '],
    ['another same-origin path', '/sign-in'],
    ['a path traversal to the consent path', `/x/../mcp/consent?rid=${RID}`],
    ['a dot segment', `/./mcp/consent?rid=${RID}`],
    ['the consent path with an extra next', `/mcp/consent?rid=${RID}&next=//evil.com`],
    ['the consent path with an extra parameter', `/mcp/consent?rid=${RID}&x=1`],
    ['the consent path with a fragment', `/mcp/consent?rid=${RID}#x`],
    ['a longer route name', `/mcp/consentx?rid=${RID}`],
    ['the consent path with a trailing slash', `/mcp/consent/?rid=${RID}`],
    ['the consent path in upper case', `/MCP/CONSENT?rid=${RID}`],
    ['the consent path without a rid', '/mcp/consent'],
    ['the consent path with an empty rid', '/mcp/consent?rid='],
    ['a rid of 15 characters', `/mcp/consent?rid=${'a'.repeat(15)}`],
    ['a rid of 129 characters', `/mcp/consent?rid=${'a'.repeat(129)}`],
    ['a rid with a dot', `/mcp/consent?rid=${RID}.x`],
    ['a rid with a percent-encoded character', `/mcp/consent?rid=${RID}%2F`],
    ['a rid with a slash', `/mcp/consent?rid=${RID}/..`],
    ['a rid given twice', `/mcp/consent?rid=${RID}&rid=${RID}`],
    ['a parameter before rid', `/mcp/consent?x=1&rid=${RID}`],
    ['a rid with a NUL', `/mcp/consent?rid=${RID}\u0000`],
    ['a rid with a newline', `/mcp/consent?rid=${RID}\n`],
    ['a full-width solidus', '\uff0f\uff0fevil.com'],
    ['an empty string', ''],
  ])('turns %s into /', (_name, input) => {
    expect(validateNextPath(input)).toBe('/');
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['an array', ['/']],
    ['an object', { toString: () => '/' }],
  ])('turns %s into /', (_name, input) => {
    expect(validateNextPath(input)).toBe('/');
  });
});

describe('readNextPath', () => {
  it('reads the next parameter after the one decoding of the query string', () => {
    const next = encodeURIComponent(`/mcp/consent?rid=${RID}`);
    expect(readNextPath(`?next=${next}`)).toBe(`/mcp/consent?rid=${RID}`);
  });

  it.each([
    ['no next', ''],
    ['an encoded open redirect', `?next=${encodeURIComponent('//evil.com')}`],
    ['a double-encoded consent path', `?next=${encodeURIComponent(encodeURIComponent('/'))}`],
    ['a second next after a valid one', `?next=//evil.com&next=${encodeURIComponent('/')}`],
  ])('answers / for %s', (_name, search) => {
    expect(readNextPath(search)).toBe('/');
  });

  it('reads an unencoded consent path whose ? stays inside next', () => {
    expect(readNextPath(`?next=/mcp/consent?rid=${RID}`)).toBe(`/mcp/consent?rid=${RID}`);
  });

  it('leaves the sign-in page its own parameters: an unencoded & ends next', () => {
    expect(readNextPath(`?next=/mcp/consent?rid=${RID}&code=abc`)).toBe(`/mcp/consent?rid=${RID}`);
  });
});

describe('signInPath and consentPath', () => {
  it('encodes the consent path as next, round-tripping through readNextPath', () => {
    const path = signInPath(consentPath(RID));
    expect(path).toBe(`/sign-in?next=%2Fmcp%2Fconsent%3Frid%3D${RID}`);
    expect(readNextPath(new URL(path, 'http://x').search)).toBe(`/mcp/consent?rid=${RID}`);
  });

  it('validates what it is given: an outside URL becomes next=/', () => {
    expect(signInPath('https://evil.com')).toBe('/sign-in?next=%2F');
  });

  it('refuses to build a consent path for a malformed rid', () => {
    expect(() => consentPath('short')).toThrow();
    expect(() => consentPath(`${RID}&next=//evil.com`)).toThrow();
  });

  it.each([
    [RID, true],
    ['a'.repeat(16), true],
    ['a'.repeat(15), false],
    ['a'.repeat(129), false],
    [`${RID}=`, false],
    [null, false],
  ])('isValidRid(%j) is %s', (rid, expected) => {
    expect(isValidRid(rid)).toBe(expected);
  });
});
