// Realtime's pure parts: Phoenix frames (v1 objects, v2 arrays), realtime-js's binary broadcast
// frames, postgres_changes filters and token wording. No sockets, no database.
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { FilterError, matchesFilters, parseFilters } from '../src/realtime/filters.ts';
import {
  decodeBroadcastPush,
  decodeTextFrame,
  encodeTextFrame,
  encodeUserBroadcast,
  ProtocolError,
} from '../src/realtime/protocol.ts';
import { identityKey, verifyRealtimeToken } from '../src/realtime/tokens.ts';

describe('Phoenix frames', () => {
  it('reads and writes vsn 2.0.0 arrays', () => {
    const frame = decodeTextFrame('["1","2","realtime:room","phx_join",{"config":{}}]', '2.0.0');
    expect(frame).toEqual({
      joinRef: '1',
      ref: '2',
      topic: 'realtime:room',
      event: 'phx_join',
      payload: { config: {} },
    });
    expect(encodeTextFrame(frame, '2.0.0')).toBe(
      '["1","2","realtime:room","phx_join",{"config":{}}]',
    );
  });

  it('reads and writes vsn 1.0.0 objects', () => {
    const frame = decodeTextFrame(
      '{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"7"}',
      '1.0.0',
    );
    expect(frame).toMatchObject({ topic: 'phoenix', event: 'heartbeat', ref: '7', joinRef: null });
    expect(JSON.parse(encodeTextFrame(frame, '1.0.0'))).toEqual({
      join_ref: null,
      ref: '7',
      topic: 'phoenix',
      event: 'heartbeat',
      payload: {},
    });
  });

  it.each([
    ['not json', '2.0.0'],
    ['{"topic":"x"}', '2.0.0'],
    ['[1,2,3]', '2.0.0'],
    ['[null,null,1,"e",{}]', '2.0.0'],
    ['["a"]', '1.0.0'],
  ] as const)('refuses the malformed frame %s', (text, vsn) => {
    expect(() => decodeTextFrame(text, vsn)).toThrow(ProtocolError);
  });
});

describe('binary broadcast frames', () => {
  // realtime-js _encodeUserBroadcastPush: kind 3, lengths of join_ref, ref, topic, event, meta,
  // encoding (1 = JSON), then the fields and the payload.
  const push = (payload: string, meta = '') => {
    const fields = ['4', '5', 'realtime:room', 'cursor', meta].map((field) => Buffer.from(field));
    return Buffer.concat([
      Buffer.from([3, ...fields.map((field) => field.length), 1]),
      ...fields,
      Buffer.from(payload),
    ]);
  };

  it('decodes a JSON user broadcast push', () => {
    expect(decodeBroadcastPush(push('{"x":1}', '{"persist":true}'))).toEqual({
      joinRef: '4',
      ref: '5',
      topic: 'realtime:room',
      event: 'cursor',
      payload: { x: 1 },
      binary: false,
      meta: { persist: true },
    });
  });

  it('refuses other kinds and truncated frames', () => {
    expect(() => decodeBroadcastPush(Buffer.from([4, 0, 0, 0, 0, 0, 1]))).toThrow(ProtocolError);
    expect(() => decodeBroadcastPush(Buffer.from([3, 9, 9]))).toThrow(ProtocolError);
    expect(() => decodeBroadcastPush(push('{not json'))).toThrow(ProtocolError);
  });

  it('encodes a user broadcast as realtime-js decodes it (kind 4)', () => {
    const bytes = encodeUserBroadcast({
      joinRef: null,
      ref: null,
      topic: 'realtime:room',
      event: 'cursor',
      payload: { x: 1 },
      binary: false,
      meta: null,
    });
    expect([...bytes.subarray(0, 5)]).toEqual([4, 13, 6, 0, 1]);
    expect(bytes.subarray(5).toString()).toBe('realtime:roomcursor{"x":1}');
  });
});

describe('postgres_changes filters', () => {
  const types: Record<string, string> = { id: 'int8', done: 'bool', title: 'text' };
  const typeOf = (column: string) => types[column];
  const record = { id: 42, done: false, title: 'a,b' };

  it.each([
    ['id=eq.42', true],
    ['id=neq.42', false],
    ['id=gt.9', true],
    ['id=gte.42', true],
    ['id=lt.100', true],
    ['id=lte.41', false],
    ['id=in.(1,42,7)', true],
    ['title=in.("a,b",c)', true],
    ['done=eq.false', true],
    ['done=eq.true', false],
    ['title=eq.a', false],
    ['id=gt.9,done=eq.false', true],
    ['id=gt.9,done=eq.true', false],
    ['missing=eq.1', false],
  ])('%s → %s', (filter, expected) => {
    expect(matchesFilters(parseFilters(filter), record, typeOf)).toBe(expected);
  });

  it('compares numbers as numbers, not as text', () => {
    expect(matchesFilters(parseFilters('id=gt.9'), { id: 10 }, typeOf)).toBe(true);
  });

  it.each(['id', 'id=like.4%', 'id=eq', '=eq.1', 'id=in.1,2'])('refuses %s', (filter) => {
    expect(() => parseFilters(filter)).toThrow(FilterError);
  });
});

describe('tokens', () => {
  const secret = new TextEncoder().encode(
    'super-secret-jwt-token-with-at-least-32-characters-long',
  );
  const sign = (claims: Record<string, unknown>, key = secret) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(key);
  const inAnHour = Math.floor(Date.now() / 1000) + 3600;

  it.each([
    [undefined, 'API key is missing'],
    ['not-a-jwt', 'The token provided is not a valid JWT'],
  ])('words %s as Realtime does', async (token, message) => {
    expect(await verifyRealtimeToken(token, secret)).toEqual({ ok: false, message });
  });

  it('words expiry, signature and missing claims as Realtime does', async () => {
    const past = Math.floor(Date.now() / 1000) - 10;
    expect(await verifyRealtimeToken(await sign({ role: 'anon', exp: past }), secret)).toEqual({
      ok: false,
      message: 'Token has expired',
    });
    const other = new TextEncoder().encode('another-secret-that-is-at-least-32-characters');
    expect(
      await verifyRealtimeToken(await sign({ role: 'anon', exp: inAnHour }, other), secret),
    ).toEqual({ ok: false, message: 'Failed to validate JWT signature' });
    expect(await verifyRealtimeToken(await sign({ exp: inAnHour }), secret)).toEqual({
      ok: false,
      message: 'Fields `role` and `exp` are required in JWT',
    });
  });

  it('groups subscribers whose claims differ only in timing fields', () => {
    const base = { role: 'authenticated', sub: 'u1', exp: 1 };
    expect(identityKey({ ...base, iat: 5, jti: 'a' })).toBe(identityKey({ ...base, exp: 99 }));
    expect(identityKey(base)).not.toBe(identityKey({ ...base, sub: 'u2' }));
  });
});
