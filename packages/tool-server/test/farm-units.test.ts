// Unit tests of the farm gate's pure parts: the canonical JSON a confirmation binds, what the audit
// keeps of arguments (long strings by digest) and of outputs (allow-listed fields only).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { argumentsForLog, outcomeSummary } from '../src/farm/audit.ts';
import { canonicalJson } from '../src/farm/confirmations.ts';

describe('canonicalJson', () => {
  it('gives equal arguments equal text whatever their key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: 'x' } })).toBe(
      canonicalJson({ a: { c: 'x', d: [1, { e: 3, f: 2 }] }, b: 1 }),
    );
  });

  it('tells different arguments apart, including types and undefined members', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
    expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }));
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
    expect(canonicalJson({ 'a"b': 1 })).toBe('{"a\\"b":1}');
  });
});

describe('argumentsForLog', () => {
  it('keeps short values and replaces a long string by its length and SHA-256', () => {
    const upload = 'A'.repeat(3_000_000);
    const logged = argumentsForLog({ device_uuid: 'd1', apk_base64: upload, flags: ['-r'] });
    expect(logged).toEqual({
      device_uuid: 'd1',
      apk_base64: {
        omitted: 'long string',
        length: 3_000_000,
        sha256: createHash('sha256').update(upload).digest('hex'),
      },
      flags: ['-r'],
    });
    expect(JSON.stringify(logged).length).toBeLessThan(300);
  });
});

describe('outcomeSummary', () => {
  const digest = (text: string) => ({
    omitted: 'kept as a digest',
    length: text.length,
    sha256: createHash('sha256').update(text).digest('hex'),
  });

  it('keeps the allow-listed outcome fields as they are', () => {
    expect(
      outcomeSummary({
        exit_code: 0,
        signal: null,
        terminated: null,
        stdout_truncated: false,
        package: 'com.example.app',
        outcome: 'Success',
      }),
    ).toEqual({
      exit_code: 0,
      signal: null,
      terminated: null,
      stdout_truncated: false,
      package: 'com.example.app',
      outcome: 'Success',
    });
    expect(outcomeSummary('not an object')).toEqual({});
  });

  // Regression: every string of 200 characters or less was kept, so a command's output, a page's
  // text or an evaluate result landed in farm_audit whenever it was short.
  it('keeps what a command printed or a page said only as length and SHA-256, however short', () => {
    const summary = outcomeSummary({
      exit_code: 0,
      stdout: 'secret-42\n',
      stderr: '',
      text: 'Welcome',
      result: 42,
      url: 'https://example.test/?token=abc',
      title: 'Inbox',
      packages: ['com.a', 'com.b'],
    });
    expect(summary).toEqual({
      exit_code: 0,
      stdout: digest('secret-42\n'),
      stderr: digest(''),
      text: digest('Welcome'),
      result: digest('42'),
      url: digest('https://example.test/?token=abc'),
      title: digest('Inbox'),
      packages: digest('["com.a","com.b"]'),
    });
    expect(JSON.stringify(summary)).not.toMatch(/secret-42|Welcome|token=abc|Inbox/);
  });
});
