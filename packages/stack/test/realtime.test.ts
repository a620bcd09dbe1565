// Realtime through the gateway with the real realtime-js inside supabase-js (docs/realtime.md):
// postgres_changes with filters and RLS per subscriber, old_record, partitions reported as their
// parent, column privileges, the 1 MB limit, token refresh and expiry, the 401 on connect, join
// errors, broadcast, and the raw v1 protocol.
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RunningStack } from '../src/index.ts';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';
import { until } from './helpers/until.ts';

const getStack = useFixtureStack();

interface Received {
  eventType: string;
  table: string;
  new: Record<string, unknown>;
  old: Record<string, unknown>;
  errors: string[] | null;
}

async function signedInClient(
  stack: RunningStack,
): Promise<{ client: SupabaseClient; id: string }> {
  const client = clientFor(stack);
  const { data, error } = await client.auth.signUp({
    email: uniqueEmail('rt'),
    password: 'rt-password-1',
  });
  if (error || !data.user) throw new Error(`sign-up failed: ${error?.message}`);
  return { client, id: data.user.id };
}

function subscribe(channel: RealtimeChannel): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.subscribe((status, error) => {
      if (status === 'SUBSCRIBED') resolve();
      else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') {
        reject(new Error(`${status}: ${error?.message}`));
      }
    });
  });
}

function subscribeError(channel: RealtimeChannel): Promise<string> {
  return new Promise((resolve) => {
    channel.subscribe((status, error) => {
      if (status === 'CHANNEL_ERROR') resolve(error?.message ?? '');
      if (status === 'SUBSCRIBED') resolve('SUBSCRIBED');
    });
  });
}

/** Lets the service poll the slot at least a few times, for "receives nothing" checks. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 400));

describe('postgres_changes', () => {
  let owner: { client: SupabaseClient; id: string };
  let stranger: { client: SupabaseClient; id: string };
  const ownerEvents: Received[] = [];
  const filteredEvents: Received[] = [];
  const strangerEvents: Received[] = [];
  const channels: RealtimeChannel[] = [];

  beforeAll(async () => {
    const stack = getStack();
    owner = await signedInClient(stack);
    stranger = await signedInClient(stack);
    const ownerChannel = owner.client
      .channel('todos-owner')
      .on('postgres_changes', { event: '*', schema: 'public', table: 'todos' }, (payload) => {
        ownerEvents.push(payload as unknown as Received);
      })
      .on(
        'postgres_changes',
        { event: 'INSERT', schema: 'public', table: 'todos', filter: 'priority=gt.5' },
        (payload) => filteredEvents.push(payload as unknown as Received),
      );
    const strangerChannel = stranger.client
      .channel('todos-stranger')
      .on('postgres_changes', { event: '*', schema: 'public', table: 'todos' }, (payload) => {
        strangerEvents.push(payload as unknown as Received);
      });
    channels.push(ownerChannel, strangerChannel);
    await Promise.all([subscribe(ownerChannel), subscribe(strangerChannel)]);
  });
  afterAll(async () => {
    for (const channel of channels) await channel.unsubscribe();
  });

  it('delivers INSERT, UPDATE and DELETE to the owner, and a filter passes only its rows', async () => {
    const low = await owner.client
      .from('todos')
      .insert({ title: 'low', priority: 1 })
      .select()
      .single();
    const high = await owner.client
      .from('todos')
      .insert({ title: 'high', priority: 9 })
      .select()
      .single();
    const inserted = await until(() =>
      ownerEvents.filter((event) => event.eventType === 'INSERT').length >= 2 ? true : undefined,
    );
    expect(inserted).toBe(true);
    await until(() => (filteredEvents.length > 0 ? true : undefined));
    await settle();
    expect(filteredEvents.map((event) => event.new.title)).toEqual(['high']);

    await owner.client.from('todos').update({ done: true }).eq('id', high.data?.id);
    const update = await until(() => ownerEvents.find((event) => event.eventType === 'UPDATE'));
    expect(update.new).toMatchObject({ id: high.data?.id, done: true, title: 'high' });
    // todos has REPLICA IDENTITY FULL: the old row comes whole.
    expect(update.old).toMatchObject({
      id: high.data?.id,
      done: false,
      title: 'high',
      priority: 9,
    });

    await owner.client.from('todos').delete().eq('id', low.data?.id);
    const removed = await until(() => ownerEvents.find((event) => event.eventType === 'DELETE'));
    expect(removed.old).toEqual({ id: low.data?.id });
    expect(removed.table).toBe('todos');
  });

  it("sends a second user nothing of the owner's inserts and updates", async () => {
    await settle();
    expect(strangerEvents.filter((event) => event.eventType !== 'DELETE')).toEqual([]);
  });

  it('reports a change to a partition under the parent table, with selectable columns only', async () => {
    const readings: Received[] = [];
    const channel = owner.client
      .channel('readings')
      .on(
        'postgres_changes',
        { event: 'INSERT', schema: 'public', table: 'readings' },
        (payload) => {
          readings.push(payload as unknown as Received);
        },
      );
    await subscribe(channel);
    const insert = await owner.client
      .from('readings')
      .insert({ value: 21.5, secret: 'hidden', taken_at: '2026-06-01T10:00:00Z' });
    expect(insert.error).toBeNull();
    const event = await until(() => readings[0]);
    expect(event.table).toBe('readings');
    expect(event.new).toMatchObject({ value: 21.5, owner_id: owner.id });
    expect(event.new).not.toHaveProperty('secret');
    await channel.unsubscribe();
  });

  it('replaces a record over 1 MB by the 413 form', async () => {
    const notes: Received[] = [];
    const channel = owner.client
      .channel('notes')
      .on('postgres_changes', { event: 'INSERT', schema: 'public', table: 'notes' }, (payload) => {
        notes.push(payload as unknown as Received);
      });
    await subscribe(channel);
    const stack = getStack();
    const service = clientFor(stack, stack.keys.serviceRoleKey);
    await service.from('notes').insert({ body: 'x'.repeat(1_100_000) });
    const event = await until(() => notes[0]);
    expect(event.errors).toEqual(['Error 413: Payload Too Large']);
    expect(event.new).toHaveProperty('id');
    expect(event.new).not.toHaveProperty('body');
    await channel.unsubscribe();
  });

  it('keeps the subscription across a token refresh (setAuth)', async () => {
    const before = ownerEvents.length;
    const { error } = await owner.client.auth.refreshSession();
    expect(error).toBeNull();
    await owner.client.from('todos').insert({ title: 'after refresh', priority: 2 });
    const event = await until(() =>
      ownerEvents.slice(before).find((candidate) => candidate.new.title === 'after refresh'),
    );
    expect(event.eventType).toBe('INSERT');
  });
});

describe('joining', () => {
  it('refuses a table outside publication supabase_realtime and a bad filter', async () => {
    const { client } = await signedInClient(getStack());
    const notPublished = await subscribeError(
      client
        .channel('nope')
        .on('postgres_changes', { event: '*', schema: 'auth', table: 'users' }, () => {}),
    );
    expect(notPublished).toContain('Unable to subscribe to changes with given parameters');
    const badFilter = await subscribeError(
      client
        .channel('bad-filter')
        .on(
          'postgres_changes',
          { event: '*', schema: 'public', table: 'todos', filter: 'priority=like.1' },
          () => {},
        ),
    );
    expect(badFilter).toContain('Error parsing `filter` params');
    const unknownColumn = await subscribeError(
      client
        .channel('bad-column')
        .on(
          'postgres_changes',
          { event: '*', schema: 'public', table: 'todos', filter: 'nosuch=eq.1' },
          () => {},
        ),
    );
    expect(unknownColumn).toContain('column "nosuch" does not exist');
    // readings.secret is not granted to authenticated: filtering on it would reveal its values.
    const hiddenColumn = await subscribeError(
      client
        .channel('hidden-column')
        .on(
          'postgres_changes',
          { event: '*', schema: 'public', table: 'readings', filter: 'secret=eq.x' },
          () => {},
        ),
    );
    expect(hiddenColumn).toContain('is not readable by role authenticated');
    const privateChannel = await subscribeError(
      client
        .channel('private-room', { config: { private: true } })
        .on('broadcast', { event: 'x' }, () => {}),
    );
    // No policy on realtime.messages lets anyone read: a private channel is refused
    // (realtime-authorization.test.ts has the allowed side).
    expect(privateChannel).toBe(
      'Unauthorized: You do not have permissions to read from this Channel topic: private-room',
    );
  });

  it('closes a channel whose token expires, with a system error first', async () => {
    const stack = getStack();
    const { client, id } = await signedInClient(stack);
    const shortLived = await new SignJWT({ role: 'authenticated', sub: id, aud: 'authenticated' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      // Long enough to join on a busy machine; the wait below is generous for the same reason.
      .setExpirationTime(Math.floor(Date.now() / 1000) + 6)
      .sign(new TextEncoder().encode(stack.keys.jwtSecret));
    await client.realtime.setAuth(shortLived);
    const system: Array<{ status: string; message: string }> = [];
    let closed = false;
    const channel = client
      .channel('expiring')
      .on('system', {}, (payload) => system.push(payload as { status: string; message: string }))
      .on('postgres_changes', { event: '*', schema: 'public', table: 'todos' }, () => {});
    await subscribe(channel);
    channel.subscribe((status) => {
      if (status === 'CLOSED') closed = true;
    });
    const error = await until(() => system.find((message) => message.status === 'error'), 20_000);
    // Realtime's confirm_token wording, sent at exp (a timer, so late by however busy we are).
    expect(error.message).toMatch(/^Token has expired \d+ seconds ago$/);
    await until(() => (closed || channel.state === 'closed' ? true : undefined), 10_000);
  }, 45_000);

  it('refuses an already expired access token at join', async () => {
    const stack = getStack();
    const { client, id } = await signedInClient(stack);
    const expired = await new SignJWT({ role: 'authenticated', sub: id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 5)
      .sign(new TextEncoder().encode(stack.keys.jwtSecret));
    await client.realtime.setAuth(expired);
    const reason = await subscribeError(
      client
        .channel('expired')
        .on('postgres_changes', { event: '*', schema: 'public', table: 'todos' }, () => {}),
    );
    expect(reason).toContain('Token has expired');
  });
});

describe('connecting', () => {
  const connect = (stack: RunningStack, query: string) =>
    new Promise<{ status: number; body: string }>((resolve) => {
      const socket = new WebSocket(
        `${stack.apiUrl.replace('http', 'ws')}/realtime/v1/websocket?${query}`,
      );
      socket.on('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      socket.on('open', () => {
        socket.close();
        resolve({ status: 101, body: '' });
      });
    });

  it.each([
    ['vsn=2.0.0', 'API key is missing'],
    ['apikey=garbage&vsn=2.0.0', 'The token provided is not a valid JWT'],
  ])("answers 401 with Realtime's error body for %s", async (query, message) => {
    const result = await connect(getStack(), query);
    expect(result.status).toBe(401);
    expect(JSON.parse(result.body)).toEqual({ error: message });
  });

  it('answers 401 for an expired token and accepts the publishable key', async () => {
    const stack = getStack();
    const expired = await new SignJWT({ role: 'anon' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime(Math.floor(Date.now() / 1000) - 5)
      .sign(new TextEncoder().encode(stack.keys.jwtSecret));
    const refused = await connect(stack, `apikey=${expired}&vsn=2.0.0`);
    expect(JSON.parse(refused.body)).toEqual({ error: 'Token has expired' });
    const accepted = await connect(stack, `apikey=${stack.keys.publishableKey}&vsn=2.0.0`);
    expect(accepted.status).toBe(101);
  });

  it('speaks vsn 1.0.0 objects: heartbeat and join replies', async () => {
    const stack = getStack();
    const socket = new WebSocket(
      `${stack.apiUrl.replace('http', 'ws')}/realtime/v1/websocket?apikey=${stack.keys.anonKey}&vsn=1.0.0`,
    );
    const replies: Array<Record<string, unknown>> = [];
    socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
    await new Promise((resolve) => socket.on('open', resolve));
    socket.send(JSON.stringify({ topic: 'phoenix', event: 'heartbeat', payload: {}, ref: '1' }));
    socket.send(
      JSON.stringify({
        topic: 'realtime:v1',
        event: 'phx_join',
        payload: { config: {} },
        ref: '2',
        join_ref: '2',
      }),
    );
    await until(() => (replies.length >= 2 ? true : undefined));
    expect(replies[0]).toEqual({
      join_ref: null,
      ref: '1',
      topic: 'phoenix',
      event: 'phx_reply',
      payload: { status: 'ok', response: {} },
    });
    expect(replies[1]).toMatchObject({ ref: '2', event: 'phx_reply', payload: { status: 'ok' } });
    socket.close();
  });
});

describe('broadcast', () => {
  it('relays channel.send between two clients, with ack, and not back to the sender', async () => {
    const stack = getStack();
    const alice = clientFor(stack);
    const bob = clientFor(stack);
    const aliceGot: unknown[] = [];
    const bobGot: unknown[] = [];
    const aliceChannel = alice
      .channel('room-b', { config: { broadcast: { ack: true } } })
      .on('broadcast', { event: 'cursor' }, (message) => aliceGot.push(message.payload));
    const bobChannel = bob
      .channel('room-b')
      .on('broadcast', { event: 'cursor' }, (message) => bobGot.push(message.payload));
    await Promise.all([subscribe(aliceChannel), subscribe(bobChannel)]);
    const status = await aliceChannel.send({
      type: 'broadcast',
      event: 'cursor',
      payload: { x: 3, y: 4 },
    });
    expect(status).toBe('ok');
    expect(await until(() => bobGot[0])).toEqual({ x: 3, y: 4 });
    await settle();
    expect(aliceGot).toEqual([]);
  });

  it('relays over HTTP too: send() from an unjoined channel and httpSend()', async () => {
    const stack = getStack();
    const receiver = clientFor(stack);
    const got: Array<{ event: string; payload: unknown }> = [];
    const listening = receiver
      .channel('room-http')
      .on('broadcast', { event: '*' }, (message) =>
        got.push({ event: message.event, payload: message.payload }),
      );
    await subscribe(listening);
    const server = clientFor(stack, stack.keys.serviceRoleKey);
    const unjoined = server.channel('room-http');
    expect(await unjoined.send({ type: 'broadcast', event: 'fallback', payload: { n: 1 } })).toBe(
      'ok',
    );
    expect(await unjoined.httpSend('direct', { n: 2 })).toEqual({ success: true });
    await until(() => (got.length >= 2 ? true : undefined));
    expect(got).toEqual([
      { event: 'fallback', payload: { n: 1 } },
      { event: 'direct', payload: { n: 2 } },
    ]);
  });

  it('refuses HTTP broadcasts without a valid token or with a malformed body', async () => {
    const stack = getStack();
    const endpoint = `${stack.apiUrl}/realtime/v1/api/broadcast`;
    const body = JSON.stringify({ messages: [{ topic: 'room-http', event: 'x', payload: {} }] });
    const anonymous = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: 'API key is missing' });
    const malformed = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: stack.keys.publishableKey },
      body: JSON.stringify({ messages: [{ event: 'x', payload: {} }] }),
    });
    expect(malformed.status).toBe(400);
  });

  it('echoes to the sender when self is set', async () => {
    const client = clientFor(getStack());
    const got: unknown[] = [];
    const channel = client
      .channel('room-self', { config: { broadcast: { self: true } } })
      .on('broadcast', { event: 'ping' }, (message) => got.push(message.payload));
    await subscribe(channel);
    await channel.send({ type: 'broadcast', event: 'ping', payload: { n: 1 } });
    expect(await until(() => got[0])).toEqual({ n: 1 });
  });
});

describe('limits', () => {
  const open = (stack: RunningStack) =>
    new Promise<WebSocket>((resolve) => {
      const socket = new WebSocket(
        `${stack.apiUrl.replace('http', 'ws')}/realtime/v1/websocket?apikey=${stack.keys.anonKey}&vsn=2.0.0`,
      );
      socket.on('open', () => resolve(socket));
    });
  const joinFrame = (topic: string, ref: number) =>
    JSON.stringify([String(ref), String(ref), topic, 'phx_join', { config: {} }]);

  it('refuses a channel beyond 100 on one connection', async () => {
    const socket = await open(getStack());
    const replies: unknown[][] = [];
    socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
    for (let n = 1; n <= 101; n += 1) socket.send(joinFrame(`realtime:many-${n}`, n));
    const last = await until(() => replies.find((reply) => reply[1] === '101'));
    expect(last[4]).toEqual({
      status: 'error',
      response: { reason: 'at most 100 channels per connection' },
    });
    expect(
      replies.filter((reply) => (reply[4] as { status: string }).status === 'ok'),
    ).toHaveLength(100);
    socket.close();
  });

  it('disconnects a client that stops reading instead of buffering for it without bound', async () => {
    const stack = getStack();
    const slow = await open(stack);
    const sender = await open(stack);
    // A member that keeps reading: once it has every broadcast, the server has offered each to
    // the slow one too, so its buffer is as full as the flood makes it.
    const watcher = await open(stack);
    let watched = 0;
    watcher.on('message', (data) => {
      if (Buffer.isBuffer(data) && data.length > 1024 * 1024) watched += 1;
    });
    slow.send(joinFrame('realtime:flood', 1));
    sender.send(joinFrame('realtime:flood', 1));
    watcher.send(joinFrame('realtime:flood', 1));
    await settle();
    let closeCode = 0;
    slow.on('close', (code) => {
      closeCode = code;
    });
    // Stop reading on the slow client's TCP socket, then flood the topic with 24 MB.
    (slow as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const fields = ['1', '', 'realtime:flood', 'blob', ''].map((field) => Buffer.from(field));
    const push = Buffer.concat([
      Buffer.from([3, ...fields.map((field) => field.length), 1]),
      ...fields,
      Buffer.from(JSON.stringify({ blob: 'x'.repeat(1024 * 1024) })),
    ]);
    for (let n = 0; n < 24; n += 1) sender.send(push);
    await until(() => (watched === 24 ? true : undefined), 30_000);
    (slow as unknown as { _socket: { resume(): void } })._socket.resume();
    await until(() => (closeCode ? closeCode : undefined), 10_000);
    expect(closeCode).toBe(1013);
    sender.close();
    watcher.close();
  }, 60_000);
});
