// Realtime's pure parts: Phoenix frames (v1 objects, v2 arrays), realtime-js's binary broadcast
// frames, postgres_changes filters, token wording, and presence diffs and pushes. No sockets, no
// database.
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { presenceSettingsOf } from '../src/realtime/channel-access.ts';
import { type ChannelMember, readsPresence, roomOf } from '../src/realtime/channel-member.ts';
import { FilterError, matchesFilters, parseFilters } from '../src/realtime/filters.ts';
import { PresenceHub } from '../src/realtime/presence.ts';
import { handlePresencePush, MAX_PRESENCE_CALLS } from '../src/realtime/presence-push.ts';
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

describe('presence', () => {
  /** A member whose frames are recorded; `policies` makes it a private one. */
  function memberOf(key: string, frames: Array<[string, unknown]>, options = {}): ChannelMember {
    const {
      private: isPrivate = false,
      enabled = true,
      presenceWrite = false,
    } = options as {
      private?: boolean;
      enabled?: boolean;
      presenceWrite?: boolean;
    };
    const record = (_topic: string, _joinRef: string | null, event: string, payload: unknown) =>
      frames.push([event, typeof payload === 'string' ? JSON.parse(payload) : payload]);
    return {
      outbox: {
        sendFrame: record,
        sendEncodedFrame: record,
        sendBroadcast: () => {},
        closeChannel: () => {},
      },
      topic: 'realtime:room',
      private: isPrivate,
      room: roomOf('realtime:room', isPrivate),
      policies: isPrivate
        ? {
            broadcast: { read: true, write: false },
            presence: { read: true, write: presenceWrite },
          }
        : null,
      presence: { key, enabled, calls: 0, windowStart: 0 },
      joinRef: '1',
      token: null,
      claims: { role: 'anon', exp: 0 },
      identity: key,
      bindings: [],
      broadcastSelf: false,
      broadcastAck: false,
      expiryTimer: null,
    };
  }

  function hubOf(members: ChannelMember[]): PresenceHub {
    return new PresenceHub((room) =>
      members.filter((member) => member.room === room && readsPresence(member)),
    );
  }

  it('sends a join, then a join and a leave with phx_ref_prev for a new payload, then a leave', () => {
    const frames: Array<[string, unknown]> = [];
    const alice = memberOf('alice', frames);
    const hub = hubOf([alice]);
    hub.track(alice, { at: 1 });
    hub.track(alice, { at: 1 });
    hub.track(alice, { at: 2 });
    hub.untrack(alice);
    hub.untrack(alice);
    const [first, second, third] = frames.map(([, diff]) => diff) as Array<{
      joins: Record<string, { metas: Array<Record<string, unknown>> }>;
      leaves: Record<string, { metas: Array<Record<string, unknown>> }>;
    }>;
    expect(frames.map(([event]) => event)).toEqual([
      'presence_diff',
      'presence_diff',
      'presence_diff',
    ]);
    const firstRef = first?.joins.alice?.metas[0]?.phx_ref;
    expect(first).toEqual({
      joins: { alice: { metas: [{ at: 1, phx_ref: firstRef }] } },
      leaves: {},
    });
    expect(second?.joins.alice?.metas[0]).toMatchObject({ at: 2, phx_ref_prev: firstRef });
    expect(second?.leaves).toEqual({ alice: { metas: [{ at: 1, phx_ref: firstRef }] } });
    expect(third?.joins).toEqual({});
    expect(Object.keys(third?.leaves ?? {})).toEqual(['alice']);
    expect(hub.stateOf(alice.room)).toEqual({});
  });

  it('lists every meta of a key in the state, and keeps public and private rooms apart', () => {
    const frames: Array<[string, unknown]> = [];
    const tab1 = memberOf('user-1', frames);
    const tab2 = memberOf('user-1', frames);
    const hidden = memberOf('user-2', [], { private: true, presenceWrite: true });
    const hub = hubOf([tab1, tab2, hidden]);
    hub.track(tab1, { tab: 1 });
    hub.track(tab2, { tab: 2 });
    hub.track(hidden, { tab: 3 });
    expect(hub.stateOf(tab1.room)['user-1']?.metas.map((meta) => meta.tab)).toEqual([1, 2]);
    expect(Object.keys(hub.stateOf(tab1.room))).toEqual(['user-1']);
    expect(Object.keys(hub.stateOf(hidden.room))).toEqual(['user-2']);
  });

  it('refuses a private track without presence write, and turns presence on with a track', () => {
    const frames: Array<[string, unknown]> = [];
    const reader = memberOf('r', frames, { private: true, enabled: false });
    const writer = memberOf('w', frames, { enabled: false });
    const hub = hubOf([reader, writer]);
    const push = { type: 'presence', event: 'track', payload: { a: 1 } };
    expect(handlePresencePush(hub, reader, push, 0)).toEqual({
      status: 'error',
      response: {},
      sync: false,
    });
    expect(handlePresencePush(hub, writer, push, 0)).toEqual({
      status: 'ok',
      response: {},
      sync: true,
    });
    expect(writer.presence.enabled).toBe(true);
    expect(handlePresencePush(hub, writer, { event: 'UNTRACK' }, 0)).toMatchObject({
      status: 'ok',
    });
  });

  it('closes after 5 pushes in 30 s and counts afresh in the next window', () => {
    const member = memberOf('m', []);
    const hub = hubOf([member]);
    const push = (n: number, now: number) =>
      handlePresencePush(hub, member, { event: 'track', payload: { n } }, now);
    for (let n = 0; n < MAX_PRESENCE_CALLS; n += 1)
      expect(push(n, 1_000 + n)).toMatchObject({ status: 'ok' });
    expect(push(9, 2_000)).toEqual({ close: 'Client presence rate limit exceeded' });
    expect(push(10, 1_000 + 30_001)).toMatchObject({ status: 'ok' });
  });

  it('reads config.presence as upstream: on without a presence object, keys as text', () => {
    expect(presenceSettingsOf({})).toMatchObject({ enabled: true });
    expect(presenceSettingsOf({ presence: { key: '', enabled: false } })).toMatchObject({
      enabled: false,
      key: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(presenceSettingsOf({ presence: { key: 7, enabled: 'true' } })).toMatchObject({
      enabled: true,
      key: '7',
    });
  });
});
