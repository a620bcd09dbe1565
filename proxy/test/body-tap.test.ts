// BodyTap without sockets: bounded memory for large bodies, decoding only complete bodies, and a
// ceiling on decompression so a small compressed body cannot balloon in memory.
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BodyTap } from '../src/capture/body-tap.ts';

describe('BodyTap', () => {
  it('keeps at most the cap and counts every byte that passed', () => {
    const tap = new BodyTap(1024);
    for (let n = 0; n < 100; n += 1) tap.push(Buffer.alloc(64 * 1024, 0x61));
    const body = tap.result('text/plain', undefined);
    expect(body).toMatchObject({ size: 100 * 64 * 1024, truncated: true, encoding: 'utf8' });
    expect(body?.text).toHaveLength(1024);
  });

  it('stores binary as base64 and an empty body as nothing', () => {
    const tap = new BodyTap(1024);
    tap.push(Buffer.from([0, 1, 2, 255]));
    expect(tap.result('application/octet-stream', undefined)).toMatchObject({
      base64: 'AAEC/w==',
      encoding: 'base64',
    });
    expect(new BodyTap(10).result('text/plain', undefined)).toBeNull();
  });

  it('leaves a truncated compressed body as wire bytes, marked not decoded', () => {
    const tap = new BodyTap(16);
    tap.push(zlib.gzipSync(Buffer.from('x'.repeat(10_000) + Math.random())));
    expect(tap.result('text/plain', 'gzip')).toMatchObject({
      truncated: true,
      decoded: false,
      encoding: 'base64',
    });
  });

  it('refuses to decode past the cap (a decompression bomb), keeping the wire bytes', () => {
    const tap = new BodyTap(2048);
    const bomb = zlib.gzipSync(Buffer.alloc(1024 * 1024, 0x61));
    tap.push(bomb);
    expect(bomb.length).toBeLessThan(2048); // 1 MB of "a": a few kB at most on the wire
    const stored = tap.result('text/plain', 'gzip');
    expect(stored).toMatchObject({ decoded: false, truncated: false, encoding: 'base64' });
    expect(Buffer.from(stored?.base64 as string, 'base64')).toEqual(bomb);
  });

  it('keeps text containing U+0000 as base64 (jsonb cannot hold it)', () => {
    const tap = new BodyTap(1024);
    tap.push(Buffer.from('a\u0000b'));
    expect(tap.result('text/plain', undefined)).toMatchObject({
      encoding: 'base64',
      base64: Buffer.from('a\u0000b').toString('base64'),
    });
  });

  it('keeps a body whose encoding is broken or unknown as wire bytes', () => {
    const broken = new BodyTap(1024);
    broken.push(Buffer.from('not gzip at all'));
    expect(broken.result('text/plain', 'gzip')).toMatchObject({
      decoded: false,
      encoding: 'base64',
    });
    const unknown = new BodyTap(1024);
    unknown.push(Buffer.from('abc'));
    expect(unknown.result('text/plain', 'compress')).toMatchObject({ decoded: false });
  });
});
