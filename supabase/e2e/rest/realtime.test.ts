// Realtime over the real data model (spec 001 §4.2 rule 5, 002 §7): a member receives their own
// devices' captures and devices while another member and a user without capabilities receive
// nothing and no error; captures land in weekly partitions and arrive as `entries`; a revoked
// token is refused on connect and at join, and a channel open with it closes on the revocation,
// before any later change (its jti, its OAuth grant, or its user deleted or banned).
import { randomUUID } from 'node:crypto';
import { createClient, type RealtimeChannel, type SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { until } from '../../../packages/stack/test/helpers/until.ts';
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

  it('close a channel already streaming on the revocation, before later changes', async () => {
    const { stack, service, A } = actors();
    const jti = randomUUID();
    const token = await mintAccessToken(stack, { sub: A.id as string, jti });
    await insertAsService(service, 'api_tokens', {
      jti,
      user_id: A.id,
      label: 'oauth',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    const joined = await joinAs(token, 'soon-revoked');
    const revoked = await service
      .from('api_tokens')
      .update({ revoked_at: new Date().toISOString() })
      .eq('jti', jti);
    expect(revoked.error).toBeNull();
    // Committed after the revocation: must not reach the revoked channel.
    const after = await insertAsService(service, 'devices', {
      name: unique('after-revoke'),
      owner_user_id: A.id,
    });
    await expectClosed(joined, 'Token has been revoked');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(joined.devices).not.toContain(after.uuid);
  });

  it("close a channel on its OAuth grant's revocation", async () => {
    const { stack, A } = actors();
    const jti = randomUUID();
    const token = await mintAccessToken(stack, { sub: A.id as string, jti });
    const db = new pg.Client({ connectionString: stack.dbUrl });
    await db.connect();
    try {
      const clientId = `rt-client-${randomUUID()}`;
      await db.query(
        `insert into private.oauth_clients (client_id, source, token_endpoint_auth_method)
         values ($1, 'registration', 'none')`,
        [clientId],
      );
      const { rows } = await db.query<{ id: string }>(
        `insert into private.oauth_grants (user_id, client_id, scope, resource)
         values ($1, $2, 'devices:view', 'http://127.0.0.1/mcp') returning id`,
        [A.id, clientId],
      );
      const grantId = rows[0]?.id as string;
      await db.query(
        `insert into public.api_tokens (jti, user_id, label, client_id, expires_at)
         values ($1, $2, 'oauth', $3, now() + interval '1 hour')`,
        [jti, A.id, clientId],
      );
      await db.query('insert into private.oauth_access_tokens (jti, grant_id) values ($1, $2)', [
        jti,
        grantId,
      ]);
      const joined = await joinAs(token, 'oauth-grant');
      // What the tool server does when the user revokes the app (grant and its tokens at once).
      await db.query('begin');
      await db.query('update private.oauth_grants set revoked_at = now() where id = $1', [grantId]);
      await db.query("select private.revoke_oauth_tokens(array[$1]::uuid[], '{}')", [grantId]);
      await db.query('commit');
      await expectClosed(joined, 'Token has been revoked');
      expect(await joinError(token)).toContain('Token has been revoked');
    } finally {
      await db.end();
    }
  });
});

describe("a user's channels", () => {
  /** A fresh signed-in user with a channel on their devices. */
  async function userWithChannel(name: string) {
    const { stack, service } = actors();
    const email = `${unique(name)}@test.local`;
    const created = await service.auth.admin.createUser({
      email,
      password: 'test-password-1',
      email_confirm: true,
    });
    if (created.error) throw created.error;
    const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
      auth: { persistSession: false, autoRefreshToken: false },
    });
    const signedIn = await client.auth.signInWithPassword({ email, password: 'test-password-1' });
    if (signedIn.error) throw signedIn.error;
    const token = signedIn.data.session.access_token;
    return { id: created.data.user.id, token, joined: await joinAs(token, name) };
  }

  it('close on the user being deleted, and the token cannot join again', async () => {
    const { service } = actors();
    const { id, token, joined } = await userWithChannel('rt-deleted');
    const { error } = await service.auth.admin.deleteUser(id);
    expect(error).toBeNull();
    await expectClosed(joined, 'User not found');
    expect(await joinError(token)).toContain('User not found');
  });

  it('close on a soft delete', async () => {
    const { service } = actors();
    const { id, joined } = await userWithChannel('rt-soft-deleted');
    const { error } = await service.auth.admin.deleteUser(id, true);
    expect(error).toBeNull();
    await expectClosed(joined, 'User not found');
  });

  it('close on the user being banned, and the token cannot join again', async () => {
    const { service } = actors();
    const { id, token, joined } = await userWithChannel('rt-banned');
    const { error } = await service.auth.admin.updateUserById(id, { ban_duration: '1h' });
    expect(error).toBeNull();
    await expectClosed(joined, 'User is banned');
    expect(await joinError(token)).toContain('User is banned');
  });
});

interface Joined {
  system: Array<{ status: string; message: string; at: number }>;
  devices: string[];
}

/** Joins a channel on `devices` with `token` over a socket opened with the publishable key. */
async function joinAs(token: string, name: string): Promise<Joined> {
  const { stack } = actors();
  const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
  await client.realtime.setAuth(token);
  const joined: Joined = { system: [], devices: [] };
  const channel = client
    .channel(name)
    .on('system', {}, (payload) =>
      joined.system.push({ ...(payload as { status: string; message: string }), at: Date.now() }),
    )
    .on('postgres_changes', { event: '*', schema: 'public', table: 'devices' }, (payload) => {
      joined.devices.push(String((payload.new as { uuid?: string }).uuid));
    });
  await new Promise<void>((resolve, reject) =>
    channel.subscribe((status, error) =>
      status === 'SUBSCRIBED' ? resolve() : status === 'CHANNEL_ERROR' ? reject(error) : undefined,
    ),
  );
  return joined;
}

async function joinError(token: string): Promise<string> {
  return joinAs(token, `rejoin-${randomUUID()}`).then(
    () => 'SUBSCRIBED',
    (reason: Error) => reason.message,
  );
}

/**
 * The channel got Realtime's shutdown (`system` error) with `message`. Revocations reach Realtime
 * through the change stream, with no periodic recheck, so any close proves it; the deadline is
 * only generous to a busy machine.
 */
async function expectClosed(joined: Joined, message: string) {
  const closed = await until(() => joined.system.find((entry) => entry.status === 'error'), 15_000);
  expect(closed.message).toBe(message);
}
