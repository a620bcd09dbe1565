// The RPCs of 001 §4.2 through supabase-js, each scoped to what the caller may see:
// entries_filtered_list / _count, entries_count (docs/data-model.md "Counts"),
// expand_service_groups, effective_settings_for_device; and the derived online field of devices
// (150 s window).
import { beforeAll, describe, expect, it } from 'vitest';
import { useActors } from './helpers/actors.ts';
import { createOwnedGraph, insertAsService, type OwnedGraph, unique } from './helpers/fixtures.ts';
import { clientWithToken, mintAccessToken } from './helpers/tokens.ts';

const actors = useActors();
const graphs = {} as Record<'A' | 'B', OwnedGraph>;
const marker = unique('rpc').replaceAll('-', '');
const hostOfA = `${marker}-shop.Example.com`;
let entryIdsOfA: number[] = [];

interface ListedEntry {
  id: number;
  host: string;
  path: string;
  url: string;
  device_uuid: string;
}

beforeAll(async () => {
  const { service, A, B } = actors();
  graphs.A = await createOwnedGraph(service, A.id as string);
  graphs.B = await createOwnedGraph(service, B.id as string);
  const payloads = [
    { host: `  ${hostOfA} `, path: '/v1/cart', url: `https://${hostOfA}/v1/cart` },
    { host: hostOfA, path: '/deals/100%_off', url: `https://${hostOfA}/deals/100%_off` },
    { host: hostOfA, path: '/deals/100x_off', url: `https://${hostOfA}/deals/100x_off` },
    { host: hostOfA, path: '/v1/checkout', url: `https://${hostOfA}/v1/checkout?step=2` },
    { host: `cdn.${marker}.example`, path: '/app.js', url: `https://cdn.${marker}.example/app.js` },
  ];
  entryIdsOfA = [];
  for (const payload of payloads) {
    const entry = await insertAsService(service, 'entries', {
      device_uuid: graphs.A.device.uuid,
      payload: { method: 'GET', statusCode: 200, ...payload },
    });
    entryIdsOfA.push(entry.id as number);
  }
  await insertAsService(service, 'entries', {
    device_uuid: graphs.B.device.uuid,
    payload: { host: hostOfA, path: '/v1/cart', url: `https://${hostOfA}/v1/cart?b=1` },
  });
});

describe('entries_filtered_list and entries_filtered_count', () => {
  it('scope a member to their own devices and show the admin every device', async () => {
    const { A, admin } = actors();
    const byA = await A.client.rpc('entries_filtered_list', { search_q: marker, lim: 100 });
    expect(byA.error).toBeNull();
    const rows = byA.data as ListedEntry[];
    expect(rows.map((row) => row.id)).toEqual([...entryIdsOfA].reverse());
    expect(new Set(rows.map((row) => row.device_uuid))).toEqual(new Set([graphs.A.device.uuid]));
    const byAdmin = await admin.client.rpc('entries_filtered_count', { search_q: marker });
    expect(byAdmin.data).toBe(entryIdsOfA.length + 1);
  });

  it('return [] and 0 without entries:view, and refuse anon with 401', async () => {
    const { nocap, anon } = actors();
    expect((await nocap.client.rpc('entries_filtered_list', { search_q: marker })).data).toEqual(
      [],
    );
    expect((await nocap.client.rpc('entries_filtered_count', { search_q: marker })).data).toBe(0);
    const refused = await anon.client.rpc('entries_filtered_list', {});
    expect(refused.status).toBe(401);
  });

  it('match host, path and url case-insensitively and trim the stored host', async () => {
    const { A } = actors();
    const upper = await A.client
      .rpc('entries_filtered_list', { search_q: marker.toUpperCase(), lim: 10 })
      .select('host');
    expect((upper.data as ListedEntry[]).length).toBe(entryIdsOfA.length);
    expect((upper.data as ListedEntry[]).every((row) => row.host === row.host.trim())).toBe(true);
    const byPath = await A.client.rpc('entries_filtered_count', { search_q: 'V1/CHECKOUT' });
    expect(byPath.data).toBeGreaterThanOrEqual(1);
    const byQuery = await A.client.rpc('entries_filtered_count', { search_q: 'checkout?step=2' });
    expect(byQuery.data).toBe(1);
  });

  it('treat % and _ in search_q as literal characters', async () => {
    const { A } = actors();
    const literal = await A.client
      .rpc('entries_filtered_list', { search_q: '100%_off' })
      .select('path');
    expect(literal.data).toEqual([{ path: '/deals/100%_off' }]);
  });

  it('filter by hosts, device_uuids and workspace', async () => {
    const { A, service } = actors();
    const cdnHost = `cdn.${marker}.example`;
    const byHost = await A.client.rpc('entries_filtered_list', { hosts: [cdnHost] }).select('host');
    expect(byHost.data).toEqual([{ host: cdnHost }]);
    const byDevice = await A.client.rpc('entries_filtered_count', {
      device_uuids: [graphs.A.device.uuid],
    });
    expect(byDevice.data).toBe(entryIdsOfA.length + 1); // plus the graph's own entry
    const othersDevice = await A.client.rpc('entries_filtered_count', {
      device_uuids: [graphs.B.device.uuid],
    });
    expect(othersDevice.data).toBe(0);

    const linked = (
      await A.client
        .from('entries')
        .select('id,ts')
        .eq('id', entryIdsOfA[1] as number)
        .single()
    ).data as { id: number; ts: string };
    await insertAsService(service, 'workspace_entries', {
      workspace_id: graphs.A.workspace.id,
      entry_id: linked.id,
      entry_ts: linked.ts,
    });
    const inWorkspace = await A.client
      .rpc('entries_filtered_list', { target_workspace: graphs.A.workspace.id })
      .select('id');
    expect(inWorkspace.data).toEqual([{ id: linked.id }]);
    const othersWorkspace = await A.client.rpc('entries_filtered_list', {
      target_workspace: graphs.B.workspace.id,
    });
    expect(othersWorkspace.data).toEqual([]);
  });

  it('page newest first with the before_id keyset cursor', async () => {
    const { A } = actors();
    const seen: number[] = [];
    let beforeId: number | undefined;
    for (;;) {
      const page = await A.client
        .rpc('entries_filtered_list', { search_q: marker, lim: 2, before_id: beforeId })
        .select('id');
      const ids = (page.data as Array<{ id: number }>).map((row) => row.id);
      if (ids.length === 0) break;
      expect(ids.length).toBeLessThanOrEqual(2);
      seen.push(...ids);
      beforeId = ids.at(-1);
    }
    expect(seen).toEqual([...entryIdsOfA].reverse());
    const count = await A.client.rpc('entries_filtered_count', { search_q: marker });
    expect(count.data).toBe(seen.length);
  });

  it.each([
    [{ lim: 0 }, '22023', 'lim must be between 1 and 1000'],
    [{ lim: 1001 }, '22023', 'lim must be between 1 and 1000'],
    [{ search_q: 'x'.repeat(201) }, '22023', 'search_q may be at most 200 characters'],
    [{ device_uuids: ['not-a-uuid'] }, '22P02', 'invalid input syntax for type uuid'],
  ])('answer bad arguments %j with 400 %s', async (args, code, message) => {
    const result = await actors().A.client.rpc('entries_filtered_list', args);
    expect(result.status).toBe(400);
    expect(result.error?.code).toBe(code);
    expect(result.error?.message).toContain(message);
  });
});

describe('expand_service_groups', () => {
  it('unions the domains of the groups the caller may see, sorted and distinct', async () => {
    const { A, service } = actors();
    const second = await insertAsService(service, 'service_groups', {
      name: unique('g'),
      owner_user_id: A.id,
      ssl_proxy_domains: ['api.z.example', ...(graphs.A.group.ssl_proxy_domains as string[])],
    });
    const result = await A.client.rpc('expand_service_groups', {
      group_ids: [graphs.A.group.id, second.id, graphs.B.group.id],
    });
    const expected = ['api.z.example', ...(graphs.A.group.ssl_proxy_domains as string[])].sort();
    expect(result.data).toEqual(expected);
  });

  it('gives {} without services:view and 400 22004 for a null list', async () => {
    const { A, nocap } = actors();
    expect(
      (await nocap.client.rpc('expand_service_groups', { group_ids: [graphs.A.group.id] })).data,
    ).toEqual([]);
    const bad = await A.client.rpc('expand_service_groups', { group_ids: null });
    expect(bad.status).toBe(400);
    expect(bad.error?.code).toBe('22004');
  });
});

describe('effective_settings_for_device', () => {
  let groupOfA: string;
  beforeAll(async () => {
    const { service } = actors();
    groupOfA = graphs.A.group.id as string;
    await insertAsService(service, 'settings_device', {
      device_uuid: graphs.A.device.uuid,
      data: {
        env: { SHOP_ENV: 'staging' },
        ssl_proxy_domains: ['own.example'],
        service_groups: [groupOfA, graphs.B.group.id],
      },
    });
  });

  it('merges the device over the global settings and expands its own groups only', async () => {
    const { A } = actors();
    const { data, error } = await A.client.rpc('effective_settings_for_device', {
      target_uuid: graphs.A.device.uuid,
    });
    expect(error).toBeNull();
    const settings = data as Record<string, unknown>;
    expect(settings.device_uuid).toBe(graphs.A.device.uuid);
    expect((settings.env as Record<string, string>).SHOP_ENV).toBe('staging');
    // B's group is named but not A's: its domains do not leak into A's device.
    expect(settings.ssl_proxy_domains).toEqual(
      ['own.example', ...(graphs.A.group.ssl_proxy_domains as string[])].sort(),
    );
  });

  it("answers 404 PT404 for another user's device and 403 without settings:view", async () => {
    const { A, nocap } = actors();
    const others = await A.client.rpc('effective_settings_for_device', {
      target_uuid: graphs.B.device.uuid,
    });
    expect(others.status).toBe(404);
    expect(others.error?.code).toBe('PT404');
    const without = await nocap.client.rpc('effective_settings_for_device', {
      target_uuid: graphs.A.device.uuid,
    });
    expect(without.status).toBe(403);
    expect(without.error?.code).toBe('42501');
  });

  it('lets a device token read its own settings and no other device', async () => {
    const { stack, A } = actors();
    const token = await mintAccessToken(stack, {
      sub: A.id as string,
      device_uuid: graphs.A.device.uuid as string,
    });
    const device = clientWithToken(stack, token);
    const own = await device.rpc('effective_settings_for_device', {
      target_uuid: graphs.A.device.uuid,
    });
    expect(own.error).toBeNull();
    const sibling = await insertAsService(actors().service, 'devices', {
      name: unique('sibling'),
      owner_user_id: A.id,
    });
    const other = await device.rpc('effective_settings_for_device', { target_uuid: sibling.uuid });
    expect(other.status).toBe(403);
    expect(other.error?.message).toBe('a device token may read only its own settings');
  });
});

describe('devices.online', () => {
  it('is true within 150 s of last_seen_at and false after', async () => {
    const { service, A } = actors();
    const now = Date.now();
    const fresh = await insertAsService(service, 'devices', {
      name: unique('fresh'),
      owner_user_id: A.id,
      last_seen_at: new Date(now - 140_000).toISOString(),
    });
    const stale = await insertAsService(service, 'devices', {
      name: unique('stale'),
      owner_user_id: A.id,
      last_seen_at: new Date(now - 160_000).toISOString(),
    });
    const { data } = await A.client
      .from('devices')
      .select('uuid,online')
      .in('uuid', [fresh.uuid, stale.uuid])
      .eq('online', true);
    expect(data).toEqual([{ uuid: fresh.uuid, online: true }]);
  });
});

// entries_count answers {count, exact}: exact up to 1000 (these fixtures), an estimate above
// (its sampling is covered by pgTAP 23-rpc-entries-count, which needs pages of data).
describe('entries_count', () => {
  it('counts what the caller may see, flagged exact, through POST and GET', async () => {
    const { A, B, admin, nocap } = actors();
    expect((await A.client.rpc('entries_count', { search_q: marker })).data).toEqual({
      count: entryIdsOfA.length,
      exact: true,
    });
    expect((await B.client.rpc('entries_count', { search_q: marker })).data).toEqual({
      count: 1,
      exact: true,
    });
    expect((await admin.client.rpc('entries_count', { search_q: marker })).data).toEqual({
      count: entryIdsOfA.length + 1,
      exact: true,
    });
    expect((await nocap.client.rpc('entries_count', { search_q: marker })).data).toEqual({
      count: 0,
      exact: true,
    });
    const byGet = await A.client.rpc('entries_count', { search_q: marker }, { get: true });
    expect(byGet.data).toEqual({ count: entryIdsOfA.length, exact: true });
  });

  it('takes the filters of inspect_entries and exact on request', async () => {
    const { A, B } = actors();
    const ok = await A.client.rpc('entries_count', { search_q: marker, status_classes: [2] });
    expect(ok.data).toEqual({ count: entryIdsOfA.length, exact: true });
    const noStatus = await B.client.rpc('entries_count', { search_q: marker, status_classes: [0] });
    expect(noStatus.data).toEqual({ count: 1, exact: true });
    const posts = await A.client.rpc('entries_count', { search_q: marker, methods: ['POST'] });
    expect(posts.data).toEqual({ count: 0, exact: true });
    const future = await A.client.rpc('entries_count', {
      search_q: marker,
      from_ts: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.data).toEqual({ count: 0, exact: true });
    const exact = await A.client.rpc('entries_count', { search_q: marker, exact: true });
    expect(exact.data).toEqual({ count: entryIdsOfA.length, exact: true });
    const refused = await A.client.rpc('entries_count', { status_classes: [9] });
    expect(refused.status).toBe(400);
    expect(refused.error?.code).toBe('22023');
  });
});

describe('every RPC for every caller', () => {
  const argumentsOf = (name: string): Record<string, unknown> =>
    ({
      entries_filtered_list: { search_q: marker },
      entries_filtered_count: { search_q: marker },
      entries_count: { search_q: marker },
      expand_service_groups: { group_ids: [graphs.A.group.id] },
      effective_settings_for_device: { target_uuid: graphs.A.device.uuid },
    })[name] as Record<string, unknown>;
  const names = [
    'entries_filtered_list',
    'entries_filtered_count',
    'entries_count',
    'expand_service_groups',
    'effective_settings_for_device',
  ];

  it.each(names)('%s: anon is refused with 401', async (name) => {
    const result = await actors().anon.client.rpc(name, argumentsOf(name));
    expect(result.status).toBe(401);
    expect(result.error?.code).toBe('42501');
  });

  it.each([
    // B's search finds only B's own entry on the shared host; A's group and device stay hidden.
    ['entries_filtered_count', 200, 1],
    ['entries_count', 200, { count: 1, exact: true }],
    ['expand_service_groups', 200, []],
    ['effective_settings_for_device', 404, null],
  ])("%s: member B learns nothing of member A's rows", async (name, status, data) => {
    const result = await actors().B.client.rpc(name, argumentsOf(name));
    expect(result.status).toBe(status);
    expect(result.data).toEqual(data);
  });

  it("entries_filtered_list: member B sees only B's device", async () => {
    const result = await actors().B.client.rpc(
      'entries_filtered_list',
      argumentsOf('entries_filtered_list'),
    );
    const rows = result.data as ListedEntry[];
    expect(rows.map((row) => row.device_uuid)).toEqual([graphs.B.device.uuid]);
  });

  it.each(names)("%s: the admin reaches member A's rows", async (name) => {
    const result = await actors().admin.client.rpc(name, argumentsOf(name));
    expect(result.error).toBeNull();
    expect(result.data).not.toEqual([]);
    expect(result.data).not.toBe(0);
  });
});
