// Realtime over the real data model (spec 001 §4.2 rule 5, 002 §7): a member receives their own
// devices' captures and devices while another member and a user without capabilities receive
// nothing and no error; captures land in weekly partitions and arrive as `entries`; a revoked
// token is refused on connect and at join.
import { randomUUID } from 'node:crypto';
import { createClient, type RealtimeChannel, type SupabaseClient } from '@supabase/supabase-js';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { until } from '../../stack/test/helpers/until.ts';
import { useActors } from './helpers/actors.ts';
import { insertAsService, unique } from './helpers/fixtures.ts';
import { mintAccessToken } from './helpers/tokens.ts';

const actors = useActors();

interface Change {
  eventType: string;
  table: string;
  new: Record<string, unknown>;
}

function watch(client: SupabaseClient, name: string, table: string, sink: Change[]) {
  const channel = client
    .channel(name)
    .on('postgres_changes', { event: '*', schema: 'public', table }, (payload) => {
      sink.push(payload as unknown as Change);
    });
  return new Promise<RealtimeChannel>((resolve, reject) =>
    channel.subscribe((status, error) =>
      status === 'SUBSCRIBED'
        ? resolve(channel)
        : status === 'CHANNEL_ERROR'
          ? reject(error)
          : undefined,
    ),
  );
}

describe('postgres_changes under the capability model', () => {
  const seenByA: Change[] = [];
  const seenByB: Change[] = [];
  const seenByNocap: Change[] = [];
  const devicesOfA: Change[] = [];

  beforeAll(async () => {
    const { A, B, nocap } = actors();
    await Promise.all([
      watch(A.client, 'entries-a', 'entries', seenByA),
      watch(B.client, 'entries-b', 'entries', seenByB),
      watch(nocap.client, 'entries-nocap', 'entries', seenByNocap),
      watch(A.client, 'devices-a', 'devices', devicesOfA),
    ]);
  });

  it("streams a member's own captures as `entries`, and nothing to others", async () => {
    const { service, A } = actors();
    const device = await insertAsService(service, 'devices', {
      name: unique('rt-device'),
      owner_user_id: A.id,
    });
    const host = `${unique('rt')}.example`;
    await insertAsService(service, 'entries', {
      device_uuid: device.uuid,
      payload: { host, url: `https://${host}/`, path: '/' },
    });
    const capture = await until(() => seenByA.find((change) => change.new.host === host));
    expect(capture).toMatchObject({ eventType: 'INSERT', table: 'entries' });
    expect(capture.new.device_uuid).toBe(device.uuid);
    const registered = await until(() =>
      devicesOfA.find((change) => change.new.uuid === device.uuid),
    );
    expect(registered.eventType).toBe('INSERT');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(seenByB.filter((change) => change.eventType !== 'DELETE')).toEqual([]);
    expect(seenByNocap).toEqual([]);
  });
});

describe('revoked tokens', () => {
  let revokedToken: string;
  beforeAll(async () => {
    const { stack, service, A } = actors();
    const jti = randomUUID();
    revokedToken = await mintAccessToken(stack, { sub: A.id as string, jti });
    await insertAsService(service, 'api_tokens', {
      jti,
      user_id: A.id,
      label: 'oauth',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      revoked_at: new Date().toISOString(),
    });
  });

  it('are refused on connect with 401', async () => {
    const { stack } = actors();
    const result = await new Promise<{ status: number; body: string }>((resolve) => {
      const socket = new WebSocket(
        `${stack.apiUrl.replace('http', 'ws')}/realtime/v1/websocket?apikey=${revokedToken}&vsn=2.0.0`,
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
    expect(result.status).toBe(401);
    expect(JSON.parse(result.body)).toEqual({ error: 'Token has been revoked' });
  });

  it('are refused at join over a socket opened with the publishable key', async () => {
    const { stack } = actors();
    const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
      auth: { persistSession: false, autoRefreshToken: false },
    });
    await client.realtime.setAuth(revokedToken);
    const error = await watch(client, 'revoked', 'devices', []).then(
      () => 'SUBSCRIBED',
      (reason: Error) => reason.message,
    );
    expect(error).toContain('Token has been revoked');
  });

  it('close a channel already streaming once its token is revoked', async () => {
    const { stack, service, A } = actors();
    const jti = randomUUID();
    const token = await mintAccessToken(stack, { sub: A.id as string, jti });
    await insertAsService(service, 'api_tokens', {
      jti,
      user_id: A.id,
      label: 'oauth',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
      auth: { persistSession: false, autoRefreshToken: false },
    });
    await client.realtime.setAuth(token);
    const system: Array<{ status: string; message: string }> = [];
    const channel = client
      .channel('soon-revoked')
      .on('system', {}, (payload) => system.push(payload as { status: string; message: string }))
      .on('postgres_changes', { event: '*', schema: 'public', table: 'devices' }, () => {});
    await new Promise<void>((resolve, reject) =>
      channel.subscribe((status, error) =>
        status === 'SUBSCRIBED'
          ? resolve()
          : status === 'CHANNEL_ERROR'
            ? reject(error)
            : undefined,
      ),
    );
    await service
      .from('api_tokens')
      .update({ revoked_at: new Date().toISOString() })
      .eq('jti', jti);
    const closed = await until(() => system.find((message) => message.status === 'error'), 10_000);
    expect(closed.message).toBe('Token has been revoked');
  }, 20_000);
});
