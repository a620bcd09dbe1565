// The read grammar of 001 §4.2 over RLS, as supabase-js emits it: eq, neq, in, gt, lt, ilike,
// like, is, order, limit/offset, and Range headers, on a member's own devices and entries.
import { beforeAll, describe, expect, it } from 'vitest';
import { useActors } from './helpers/actors.ts';
import { insertAsService, unique } from './helpers/fixtures.ts';

const actors = useActors();
const prefix = unique('flt');
const names = ['alpha', 'bravo', 'charlie', 'delta'].map((name) => `${prefix}-${name}`);
const deviceUuids: string[] = [];

beforeAll(async () => {
  const { service, A, B } = actors();
  for (const [index, name] of names.entries()) {
    const device = await insertAsService(service, 'devices', {
      name,
      os: index % 2 === 0 ? 'ios' : 'android',
      owner_user_id: A.id,
      country: index === 3 ? null : 'DE',
      last_seen_at: new Date(Date.UTC(2026, 0, 1 + index)).toISOString(),
    });
    deviceUuids.push(device.uuid as string);
  }
  // B's device matches the same filters and must never appear for A.
  await insertAsService(service, 'devices', { name: `${prefix}-bravo-of-b`, owner_user_id: B.id });
});

const devicesOfA = () =>
  actors().A.client.from('devices').select('name').like('name', `${prefix}-%`);
const namesOf = (data: unknown) => (data as Array<{ name: string }>).map((row) => row.name);

describe('REST filters on devices (scoped member)', () => {
  it.each([
    ['eq', () => devicesOfA().eq('name', names[1] as string), [names[1]]],
    ['neq', () => devicesOfA().neq('os', 'ios').order('name'), [names[1], names[3]]],
    ['in', () => devicesOfA().in('name', [names[0], names[2]]).order('name'), [names[0], names[2]]],
    [
      'gt',
      () => devicesOfA().gt('last_seen_at', '2026-01-02T12:00:00Z').order('name'),
      [names[2], names[3]],
    ],
    [
      'lt',
      () => devicesOfA().lt('last_seen_at', '2026-01-02T12:00:00Z').order('name'),
      [names[0], names[1]],
    ],
    ['ilike', () => devicesOfA().ilike('name', `%${'BRAVO'}%`), [names[1]]],
    ['like (case-sensitive)', () => devicesOfA().like('name', '%BRAVO%'), []],
    ['is null', () => devicesOfA().is('country', null), [names[3]]],
    ['order desc', () => devicesOfA().order('name', { ascending: false }), [...names].reverse()],
    ['limit/offset', () => devicesOfA().order('name').range(1, 2), [names[1], names[2]]],
  ])('%s', async (_operator, query, expected) => {
    const { data, error } = await query();
    expect(error).toBeNull();
    expect(namesOf(data)).toEqual(expected);
  });

  it('pages with a Range header and reports Content-Range', async () => {
    const { stack, A } = actors();
    const token = A.accessToken as string;
    const response = await fetch(
      `${stack.apiUrl}/rest/v1/devices?select=name&name=like.${prefix}-*&order=name`,
      {
        headers: {
          apikey: token,
          authorization: `Bearer ${token}`,
          range: '1-2',
          'range-unit': 'items',
          prefer: 'count=exact',
        },
      },
    );
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe('1-2/4');
    expect(namesOf(await response.json())).toEqual([names[1], names[2]]);
  });

  it('counts only rows in scope', async () => {
    const { count } = await actors()
      .A.client.from('devices')
      .select('uuid', { count: 'exact', head: true })
      .like('name', `${prefix}-%`);
    expect(count).toBe(4);
  });
});

describe('REST reads of entries by native columns', () => {
  it('filters on host, projects columns and floors ts (001 §4.2 rules 1-3)', async () => {
    const { service, A } = actors();
    const host = `${prefix}.native.example`;
    await insertAsService(service, 'entries', {
      device_uuid: deviceUuids[0],
      payload: { host: ` ${host} `, path: '/p', url: `https://${host}/p` },
    });
    const since = new Date(Date.now() - 3600_000).toISOString();
    const { data, error } = await A.client
      .from('entries')
      .select('id,ts,host,url,path')
      .eq('host', host)
      .gte('ts', since)
      .order('id', { ascending: false });
    expect(error).toBeNull();
    expect(data).toEqual([
      {
        id: expect.any(Number),
        ts: expect.any(String),
        host,
        url: `https://${host}/p`,
        path: '/p',
      },
    ]);
  });
});
