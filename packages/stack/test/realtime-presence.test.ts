// Presence through the gateway with the real realtime-js (docs/realtime.md "Presence"): the sync
// after join even in an empty room, join and leave diffs between clients, untrack and a changed
// payload, leaving on channel close and on disconnect, config.presence.key, presence that is off
// until a track turns it on, and the per-channel rate limit.
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import { afterEach, describe, expect, it } from 'vitest';
import { clientFor, useFixtureStack } from './helpers/fixture-stack.ts';
import {
  openRawSocket,
  push,
  type RawFrame,
  settle,
  subscribe,
} from './helpers/realtime-clients.ts';
import { until } from './helpers/until.ts';

const getStack = useFixtureStack();

interface Watched {
  channel: RealtimeChannel;
  syncs: number;
  joins: Array<{ key: string; newPresences: Array<Record<string, unknown>> }>;
  leaves: Array<{ key: string; leftPresences: Array<Record<string, unknown>> }>;
}

const clients: SupabaseClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.removeAllChannels();
});

/** A client on `room` with presence listeners (which turn presence on), recording every event. */
async function watch(room: string, key?: string): Promise<Watched> {
  const client = clientFor(getStack());
  clients.push(client);
  const watched: Watched = {
    channel: client.channel(room, key ? { config: { presence: { key } } } : undefined),
    syncs: 0,
    joins: [],
    leaves: [],
  };
  watched.channel
    .on('presence', { event: 'sync' }, () => {
      watched.syncs += 1;
    })
    .on('presence', { event: 'join' }, ({ key, newPresences }) => {
      watched.joins.push({ key, newPresences });
    })
    .on('presence', { event: 'leave' }, ({ key, leftPresences }) => {
      watched.leaves.push({ key, leftPresences });
    });
  await subscribe(watched.channel);
  return watched;
}

const keysOf = (watched: Watched) => Object.keys(watched.channel.presenceState()).sort();

describe('presence', () => {
  it('syncs right after join, even in an empty room', async () => {
    const alice = await watch('presence-empty');
    await until(() => (alice.syncs > 0 ? true : undefined));
    expect(alice.channel.presenceState()).toEqual({});
  });

  it('shows a track to every member as a join, with a presence_ref per meta', async () => {
    const alice = await watch('presence-two', 'alice');
    const bob = await watch('presence-two', 'bob');
    expect(await alice.channel.track({ name: 'Alice' })).toBe('ok');
    const seenByBob = await until(() => bob.joins.find((join) => join.key === 'alice'));
    expect(seenByBob.newPresences).toEqual([{ name: 'Alice', presence_ref: expect.any(String) }]);
    // The tracker sees itself too, as on hosted Supabase.
    await until(() => alice.joins.find((join) => join.key === 'alice'));
    expect(await bob.channel.track({ name: 'Bob' })).toBe('ok');
    await until(() => alice.joins.find((join) => join.key === 'bob'));
    expect(keysOf(alice)).toEqual(['alice', 'bob']);
    expect(keysOf(bob)).toEqual(['alice', 'bob']);
    const refs = [
      alice.channel.presenceState().alice?.[0]?.presence_ref,
      alice.channel.presenceState().bob?.[0]?.presence_ref,
    ];
    expect(new Set(refs).size).toBe(2);
    // A third member joining later gets the whole room in its first sync.
    const carol = await watch('presence-two', 'carol');
    await until(() => (carol.syncs > 0 ? true : undefined));
    expect(keysOf(carol)).toEqual(['alice', 'bob']);
  });

  it('replaces the meta on a new payload, ignores the same payload, and leaves on untrack', async () => {
    const alice = await watch('presence-untrack', 'alice');
    const bob = await watch('presence-untrack', 'bob');
    await alice.channel.track({ status: 'busy' });
    const first = await until(() => bob.joins.find((join) => join.key === 'alice'));
    const firstRef = first.newPresences[0]?.presence_ref;
    expect(await alice.channel.track({ status: 'busy' })).toBe('ok');
    await alice.channel.track({ status: 'idle' });
    const left = await until(() => bob.leaves.find((leave) => leave.key === 'alice'));
    expect(left.leftPresences).toEqual([{ status: 'busy', presence_ref: firstRef }]);
    expect(bob.joins.filter((join) => join.key === 'alice')).toHaveLength(2);
    const replaced = bob.channel.presenceState().alice;
    expect(replaced).toEqual([{ status: 'idle', presence_ref: expect.any(String) }]);
    expect(replaced?.[0]?.presence_ref).not.toBe(firstRef);
    expect(await alice.channel.untrack()).toBe('ok');
    await until(() => (bob.leaves.length === 2 ? true : undefined));
    expect(keysOf(bob)).toEqual([]);
  });

  it('leaves when the channel is closed and when the socket disconnects', async () => {
    const alice = await watch('presence-leave', 'alice');
    const bob = await watch('presence-leave', 'bob');
    const carol = await watch('presence-leave', 'carol');
    await bob.channel.track({ n: 1 });
    await carol.channel.track({ n: 2 });
    await until(() => (keysOf(alice).length === 2 ? true : undefined));
    await bob.channel.unsubscribe();
    await until(() => alice.leaves.find((leave) => leave.key === 'bob'));
    const carolClient = clients[2] as SupabaseClient;
    await carolClient.realtime.disconnect();
    await until(() => alice.leaves.find((leave) => leave.key === 'carol'));
    expect(keysOf(alice)).toEqual([]);
  });

  it('groups the trackers of one config.presence.key, and generates a key otherwise', async () => {
    const watcher = await watch('presence-keys');
    const tab1 = await watch('presence-keys', 'user-7');
    const tab2 = await watch('presence-keys', 'user-7');
    const anonymous = await watch('presence-keys');
    await tab1.channel.track({ tab: 1 });
    await tab2.channel.track({ tab: 2 });
    await anonymous.channel.track({ tab: 3 });
    await until(() =>
      Object.values(watcher.channel.presenceState()).flat().length === 3 ? true : undefined,
    );
    const state = watcher.channel.presenceState<{ tab: number }>();
    expect(state['user-7']?.map((meta) => meta.tab).sort()).toEqual([1, 2]);
    const generated = Object.keys(state).find((key) => key !== 'user-7') as string;
    expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe('presence over the raw protocol', () => {
  const join = (topic: string, ref: string, config: Record<string, unknown>): RawFrame => [
    ref,
    ref,
    topic,
    'phx_join',
    { config },
  ];
  const eventsOn = (frames: RawFrame[], topic: string, event: string) =>
    frames.filter((frame) => frame[2] === topic && frame[3] === event);

  it('sends nothing of presence to a member that has it off, until its own track turns it on', async () => {
    const stack = getStack();
    const quiet = await openRawSocket(stack);
    const loud = await openRawSocket(stack);
    const topic = 'realtime:presence-off';
    // What realtime-js sends for a channel without presence listeners.
    expect(
      await push(quiet, join(topic, '1', { presence: { key: '', enabled: false } })),
    ).toMatchObject({ status: 'ok' });
    await push(loud, join(topic, '1', { presence: { key: 'loud', enabled: true } }));
    await until(() => eventsOn(loud.frames, topic, 'presence_state')[0]);
    await push(loud, [
      '1',
      '2',
      topic,
      'presence',
      { type: 'presence', event: 'track', payload: { a: 1 } },
    ]);
    await until(() => eventsOn(loud.frames, topic, 'presence_diff')[0]);
    await settle();
    expect(eventsOn(quiet.frames, topic, 'presence_state')).toEqual([]);
    expect(eventsOn(quiet.frames, topic, 'presence_diff')).toEqual([]);
    // Its own track turns presence on: the room's state follows the reply.
    expect(
      await push(quiet, [
        '1',
        '3',
        topic,
        'presence',
        { type: 'presence', event: 'track', payload: { b: 2 } },
      ]),
    ).toEqual({ status: 'ok', response: {} });
    const state = await until(() => eventsOn(quiet.frames, topic, 'presence_state')[0]);
    expect(Object.keys(state[4])).toContain('loud');
    expect(Object.values(state[4])).toHaveLength(2);
    quiet.socket.close();
    loud.socket.close();
  });

  it('is on for a join without a presence config, and refuses a payload that is not an object', async () => {
    const raw = await openRawSocket(getStack());
    const topic = 'realtime:presence-default';
    await push(raw, join(topic, '1', {}));
    const state = await until(() => eventsOn(raw.frames, topic, 'presence_state')[0]);
    expect(state[4]).toEqual({});
    expect(
      await push(raw, [
        '1',
        '2',
        topic,
        'presence',
        { type: 'presence', event: 'track', payload: [1] },
      ]),
    ).toEqual({ status: 'error', response: { reason: 'Presence track payload must be a map' } });
    raw.socket.close();
  });

  it('closes a channel after more than 5 presence pushes in 30 s, as Supabase does', async () => {
    const raw = await openRawSocket(getStack());
    const topic = 'realtime:presence-flood';
    await push(raw, join(topic, '1', { presence: { key: 'x', enabled: true } }));
    for (let n = 1; n <= 5; n += 1) {
      const reply = await push(raw, [
        '1',
        `t${n}`,
        topic,
        'presence',
        { type: 'presence', event: 'track', payload: { n } },
      ]);
      expect(reply).toMatchObject({ status: 'ok' });
    }
    raw.socket.send(
      JSON.stringify([
        '1',
        't6',
        topic,
        'presence',
        { type: 'presence', event: 'track', payload: { n: 6 } },
      ]),
    );
    const system = await until(() => eventsOn(raw.frames, topic, 'system')[0]);
    expect(system[4]).toMatchObject({
      status: 'error',
      message: 'Client presence rate limit exceeded',
    });
    await until(() => eventsOn(raw.frames, topic, 'phx_close')[0]);
    raw.socket.close();
  });
});
