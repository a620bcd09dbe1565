// The stats and status feeds (spec 002 §2.1, §2.2, §4, §6, §7): both snapshots well-formed per the
// shared schemas, the REST read shape, get_stats, the pg_cron refresh, and the capability gates on
// REST, the RPC and Realtime: stats:view and status:view each open one feed; a member holding
// neither reads [] and receives nothing, without an error.
import { StatsSnapshot, StatusSnapshot } from '@capture/status';
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../packages/stack/test/helpers/until.ts';
import { type Actor, useActors } from './helpers/actors.ts';
import { insertAsService, unique } from './helpers/fixtures.ts';

const actors = useActors();
let statsReader: Actor;
let statusReader: Actor;
let neither: Actor;

async function grantRole(service: SupabaseClient, userId: string, section: 'stats' | 'status') {
  const role = await insertAsService(service, 'roles', {
    slug: unique(`${section}-reader`).replaceAll('-', '_'),
    name: `${section} reader`,
  });
  await insertAsService(service, 'role_capabilities', {
    role_id: role.id,
    section,
    action: 'view',
  });
  await service.from('user_roles').delete().eq('user_id', userId);
  await insertAsService(service, 'user_roles', { user_id: userId, role_id: role.id });
}

beforeAll(async () => {
  const { service, B, nocap, A } = actors();
  await grantRole(service, B.id as string, 'stats');
  await grantRole(service, nocap.id as string, 'status');
  statsReader = B;
  statusReader = nocap;
  neither = A;
});

async function refreshStatsLikeCron() {
  const db = new pg.Client({ connectionString: actors().stack.dbUrl });
  await db.connect();
  try {
    await db.query('select private.refresh_service_stats()');
  } finally {
    await db.end();
  }
}

describe('stats', () => {
  it('get_stats returns every field of 002 §2.1, fresh', async () => {
    const { data, error } = await statsReader.client.rpc('get_stats', {});
    expect(error).toBeNull();
    const stats = StatsSnapshot.parse(data);
    expect(stats.total_entries).toBeGreaterThanOrEqual(4000); // the seed's captures
    expect(Date.now() - Date.parse(stats.generated_at)).toBeLessThan(10_000);
  });

  it('counts new captures at once, without a full scan', async () => {
    const { service, admin } = actors();
    const before = StatsSnapshot.parse((await statsReader.client.rpc('get_stats', {})).data);
    const device = await insertAsService(service, 'devices', {
      name: unique('stats-device'),
      owner_user_id: admin.id,
    });
    const host = `${unique('stats')}.example`;
    await service.from('entries').insert(
      Array.from({ length: 3 }, () => ({
        device_uuid: device.uuid,
        payload: { host, statusCode: 503, source: 'pac', url: `https://${host}/`, path: '/' },
      })),
    );
    const after = StatsSnapshot.parse((await statsReader.client.rpc('get_stats', {})).data);
    expect(after.total_entries).toBe(before.total_entries + 3);
    expect(after.entries_1h).toBe(before.entries_1h + 3);
    expect(after.status_class_mix['5']).toBe((before.status_class_mix['5'] ?? 0) + 3);
    expect(after.total_devices).toBe(before.total_devices + 1);
  });

  it('never makes one capture writer wait for another', async () => {
    const { stack } = actors();
    const first = new pg.Client({ connectionString: stack.dbUrl });
    const second = new pg.Client({ connectionString: stack.dbUrl });
    await Promise.all([first.connect(), second.connect()]);
    try {
      await first.query('begin');
      await first.query(`insert into public.entries (payload) values ('{"host":"open.example"}')`);
      // With a shared counter row this insert would wait for the first transaction to end.
      await second.query("set lock_timeout = '1s'");
      const inserted = await second.query(
        `insert into public.entries (payload) values ('{"host":"parallel.example"}') returning id`,
      );
      expect(inserted.rowCount).toBe(1);
      await first.query('rollback');
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
  });

  it('is refused with 403 42501 without stats:view', async () => {
    const refused = await neither.client.rpc('get_stats', {});
    expect(refused.status).toBe(403);
    expect(refused.error?.code).toBe('42501');
  });

  it('reads the snapshot row as a one-element array, and [] without stats:view', async () => {
    await refreshStatsLikeCron();
    const { data } = await statsReader.client.from('service_stats').select('snapshot').eq('id', 1);
    expect(data).toHaveLength(1);
    StatsSnapshot.parse((data as Array<{ snapshot: unknown }>)[0]?.snapshot);
    expect(
      (await neither.client.from('service_stats').select('snapshot').eq('id', 1)).data,
    ).toEqual([]);
    expect((await statusReader.client.from('service_stats').select('snapshot')).data).toEqual([]);
  });

  it('is refreshed by the pg_cron job every minute', async () => {
    const { stack } = actors();
    const db = new pg.Client({ connectionString: stack.dbUrl });
    await db.connect();
    try {
      const job = await db.query("select schedule from cron.job where jobname = 'service-stats'");
      expect(job.rows).toEqual([{ schedule: '* * * * *' }]);
      const started = new Date();
      // pg_cron 1.4 (Debian 12) schedules by the minute: wait for the next tick.
      let refreshed: Date | undefined;
      const deadline = Date.now() + 75_000;
      while (!refreshed && Date.now() < deadline) {
        const { rows } = await db.query<{ updated_at: Date }>(
          'select updated_at from public.service_stats where id = 1',
        );
        if (rows[0] && rows[0].updated_at > started) refreshed = rows[0].updated_at;
        else await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(refreshed).toBeInstanceOf(Date);
      // pg_cron marks the run succeeded only after the job's commit, which the row shows first:
      // a read right after it can still see 'running' (seen in CI).
      let statuses: string[] = [];
      const marked = Date.now() + 10_000;
      while (!statuses.includes('succeeded') && Date.now() < marked) {
        const runs = await db.query<{ status: string }>(
          `select status from cron.job_run_details d join cron.job j using (jobid)
           where j.jobname = 'service-stats' and d.start_time >= $1`,
          [started],
        );
        statuses = runs.rows.map((row) => row.status);
        if (!statuses.includes('succeeded'))
          await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(statuses).toContain('succeeded');
    } finally {
      await db.end();
    }
  }, 90_000);
});

describe('status', () => {
  it('reads the row the stack status service writes: one element, every field of 002 §2.2', async () => {
    const read = () =>
      statusReader.client.from('service_status').select('snapshot,updated_at').eq('id', 1);
    let rows = (await read()).data as Array<{ snapshot: unknown; updated_at: string }>;
    for (let attempt = 0; rows.length === 0 && attempt < 40; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      rows = (await read()).data as Array<{ snapshot: unknown; updated_at: string }>;
    }
    expect(rows).toHaveLength(1);
    const status = StatusSnapshot.parse(rows[0]?.snapshot);
    expect(status.components.map((component) => component.key)).toEqual([
      'postgres',
      'rest',
      'auth',
      'realtime',
      'functions',
      'proxy',
      'tool-server',
    ]);
    // 002 §8: a row older than about 30 s means the status service is down.
    expect(Date.now() - Date.parse(rows[0]?.updated_at as string)).toBeLessThan(30_000);
  });

  it('reads [] without status:view, and there is no rpc/get_status', async () => {
    expect((await neither.client.from('service_status').select('snapshot')).data).toEqual([]);
    expect((await statsReader.client.from('service_status').select('snapshot')).data).toEqual([]);
    const missing = await statusReader.client.rpc('get_status', {});
    expect(missing.status).toBe(404);
  });
});

describe('Realtime push gated by capability', () => {
  function follow(actor: Actor, table: string, sink: unknown[]) {
    const channel = actor.client
      .channel(`${table}-${actor.name}`)
      .on(
        'postgres_changes',
        { event: 'UPDATE', schema: 'public', table, filter: 'id=eq.1' },
        (payload) => sink.push(payload.new),
      );
    return new Promise<RealtimeChannel>((resolve, reject) =>
      channel.subscribe((state, error) =>
        state === 'SUBSCRIBED'
          ? resolve(channel)
          : state === 'CHANNEL_ERROR'
            ? reject(error)
            : undefined,
      ),
    );
  }

  it('delivers service_stats UPDATEs to stats:view, service_status UPDATEs to status:view, nothing to a member', async () => {
    const statsSeen: unknown[] = [];
    const statusSeen: unknown[] = [];
    const statusSeenByStatsReader: unknown[] = [];
    const seenByNeither: unknown[] = [];
    await Promise.all([
      follow(statsReader, 'service_stats', statsSeen),
      follow(statusReader, 'service_status', statusSeen),
      follow(statsReader, 'service_status', statusSeenByStatsReader),
      follow(neither, 'service_stats', seenByNeither),
      follow(neither, 'service_status', seenByNeither),
    ]);
    await refreshStatsLikeCron();
    const statsRow = (await until(() => statsSeen[0])) as { snapshot: unknown };
    StatsSnapshot.parse(statsRow.snapshot);
    const statusRow = (await until(() => statusSeen[0])) as { snapshot: unknown };
    StatusSnapshot.parse(statusRow.snapshot);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(seenByNeither).toEqual([]);
    expect(statusSeenByStatsReader).toEqual([]);
  });
});
