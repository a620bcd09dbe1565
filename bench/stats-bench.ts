// Benchmark of get_stats() at 10k, 100k and 1M entries, beside a naive
// version of the same snapshot that scans entries on every call, in one run. Both run in SQL
// as an admin caller (role and claims set as PostgREST sets them).
// Run: npm run bench:stats -- [--sizes 10000,100000,1000000] [--runs 30] [--naive-runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { createBenchDevices, insertBenchEntries } from './entries-generator.ts';
import { percentile } from './percentile.ts';

const { values } = parseBenchArgs({
  name: 'bench:stats',
  measures: `get_stats() p50/p95 at each size, in SQL as an admin caller (role and claims set as
    PostgREST sets them), on a throwaway stack loaded with generated captures step by step (50
    devices); after each step the service-stats prune and vacuum analyze run, as the cron job and
    autovacuum would.`,
  comparedWith: `private.bench_naive_stats(), created by the bench: the same snapshot computed from
    entries on every call, timed the same way in the same run. Goal: get_stats under 100 ms at 1M
    entries (docs/feeds.md, "Benchmark").`,
  flags: {
    sizes: {
      type: 'string',
      value: 'LIST',
      description:
        'entry counts to measure at, comma-separated, ascending: captures are added up to each',
      default: '10000,100000,1000000',
    },
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed get_stats() calls per size, after one warm-up',
      default: '30',
    },
    'naive-runs': {
      type: 'string',
      value: 'N',
      description:
        'timed naive full-scan calls per size, after one warm-up; fewer, as they are slow',
      default: '5',
    },
    weeks: {
      type: 'string',
      value: 'W',
      description: 'weeks the captures are spread over, evenly',
      default: '26',
    },
  },
});
const sizes = values.sizes.split(',').map(Number);

/** The same snapshot computed from entries directly: what get_stats would be without counters. */
const NAIVE = `create function private.bench_naive_stats() returns jsonb language sql stable
  security definer set search_path = '' as $$
  with day as (select * from public.entries e where e.ts > now() - interval '24 hours')
  select jsonb_build_object(
    'total_devices', (select count(*) from public.devices),
    'online_devices', (select count(*) from public.devices d
                       where d.last_seen_at > now() - private.online_window()),
    'total_entries', (select count(*) from public.entries),
    'entries_1h', (select count(*) from public.entries e where e.ts > now() - interval '1 hour'),
    'entries_24h', (select count(*) from day),
    'requests_per_sec', (select round(count(*) / 300.0, 3) from public.entries e
                         where e.ts > now() - interval '5 minutes'),
    'status_class_mix', (select coalesce(jsonb_object_agg(k, n), '{}') from (
        select substr(payload ->> 'statusCode', 1, 1) k, count(*) n from day
        where payload ? 'statusCode' group by 1) s),
    'source_mix', (select coalesce(jsonb_object_agg(k, n), '{}') from (
        select coalesce(payload ->> 'source', 'unknown') k, count(*) n from day group by 1) s),
    'top_domains', (select coalesce(jsonb_agg(jsonb_build_object('host', host, 'count', n)), '[]')
        from (select host, count(*) n from day group by host order by n desc limit 10) t),
    'top_devices', (select coalesce(jsonb_agg(jsonb_build_object('device_uuid', device_uuid, 'count', n)), '[]')
        from (select device_uuid, count(*) n from day group by 1 order by n desc limit 10) t),
    'generated_at', now())
$$`;

const dataDir = mkdtempSync(join(tmpdir(), 'bench-stats-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  seed: false,
  statusIntervalMs: 3_600_000,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();

async function timeCall(sql: string, runs: number) {
  const times: number[] = [];
  for (let run = 0; run <= runs; run += 1) {
    await db.query('begin');
    await db.query(
      `select set_config('role', 'authenticated', true), set_config('request.jwt.claims', $1, true)`,
      [JSON.stringify({ role: 'authenticated', sub: 'b0000000-0000-4000-8000-000000000001' })],
    );
    const started = performance.now();
    await db.query(sql);
    const elapsed = performance.now() - started;
    await db.query('rollback');
    if (run > 0) times.push(elapsed); // the first call warms the caches
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

const rows: string[] = [];
try {
  await db.query(NAIVE);
  // Like get_stats: definer rights over every row, callable by the signed-in admin.
  await db.query('grant execute on function private.bench_naive_stats() to authenticated');
  const weeks = Number(values.weeks);
  const { userIds, deviceUuids } = await createBenchDevices(db, {
    users: 10,
    devicesPerUser: 5,
    weeks,
  });
  await db.query(
    `insert into public.user_roles (user_id, role_id) select $1, id from public.roles where slug = 'admin'`,
    [userIds[0]],
  );
  let present = 0;
  for (const size of sizes) {
    const started = performance.now();
    await insertBenchEntries(db, deviceUuids, { entries: size - present, weeks });
    present = size;
    // The generator back-dates captures over weeks, so it leaves counters for every hour of
    // them; the service-stats job prunes all but two days within a minute. Do that now, then
    // what autovacuum would do.
    await db.query('select private.refresh_service_stats()');
    await db.query(
      'vacuum analyze public.entries, private.entry_counts_hourly, private.entry_counts_minutely',
    );
    process.stderr.write(
      `${size} entries in ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
    );
    const fast = await timeCall('select public.get_stats()', Number(values.runs));
    const naive = await timeCall(
      'select private.bench_naive_stats()',
      Number(values['naive-runs']),
    );
    rows.push(
      `| ${size.toLocaleString('en')} | ${fast.p50.toFixed(2)} / ${fast.p95.toFixed(2)} | ` +
        `${naive.p50.toFixed(1)} / ${naive.p95.toFixed(1)} | ${(naive.p50 / fast.p50).toFixed(0)}x |`,
    );
    process.stderr.write(`${rows.at(-1)}\n`);
  }
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
  console.log(`entries spread over ${weeks} weeks on 50 devices; times in ms, SQL as an admin`);
  console.log('| entries | get_stats p50 / p95 | naive full scan p50 / p95 | naive / get_stats |');
  console.log('|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
