// Unit tests of the farm gate's pure parts: the canonical JSON a confirmation binds, what the audit
// keeps of arguments (long strings by digest) and of outputs (short scalars only).
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
  it('keeps scalars and short strings, drops long text and nested values', () => {
    expect(
      outcomeSummary({
        exit_code: 0,
        terminated: null,
        truncated: false,
        package: 'com.example.app',
        stdout: 'x'.repeat(500),
        details: { a: 1 },
      }),
    ).toEqual({ exit_code: 0, terminated: null, truncated: false, package: 'com.example.app' });
    expect(outcomeSummary('not an object')).toEqual({});
  });
});
