// How the captures' costs grow with the table: one stack, the same 50 devices and 26 weeks filled
// to each size in turn from empty and in capture order (1M, then 10M: ten times as many captures
// per week), and at each size p50/p95 of the reads the dashboard and the tools make through the
// gateway and PostgREST (the rare searches also with step 2 as it was, the anchor), the proxy's
// capture ingest (its own CaptureWriter) with a loss check, and at the last size the retention
// job dropping the oldest week while ingest and reads go on.
// Run: npm run bench:scale -- [--sizes 1000000,10000000] [--runs 40]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { REPO_ROOT } from '../packages/stack/src/stack.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { createBenchDevices, insertBenchEntries } from './entries-generator.ts';
import { measureDeployCosts } from './scale-deploy.ts';
import { measureIngest, measureRetentionUnderLoad } from './scale-ingest.ts';
import { type Timing, timeCalls, timingCell } from './timed-calls.ts';

const { values } = parseBenchArgs({
  name: 'bench:scale',
  measures: `The growth of each capture read from one size to the next, in one run on one stack:
    entries_filtered_list (newest page, keyset next page, a common and a rare search term) and
    entries_count (estimated) as an admin and as a member, get_stats, summarize_device_traffic
    over 24 h and 7 d; capture ingest in captures/s through the proxy's CaptureWriter, empty and
    at each size, every capture counted back; and at the last size the retention job dropping the
    oldest week while ingest and reads run; then what adding a column or an index to entries costs
    at the last size.`,
  comparedWith: `each read at the first size, in the same run (the growth column is last size p95
    over first size p95), and ingest into the empty table. Goals (docs/scale.md): list and count
    p95 under 50 ms, get_stats and the summaries under 100 ms at 10M; ingest at 10M as at empty;
    retention never stalls ingest or reads for longer than its lock timeout.`,
  flags: {
    sizes: {
      type: 'string',
      value: 'N,N',
      description: 'table sizes to fill to and measure at, ascending, comma-separated',
      default: '1000000,10000000',
    },
    weeks: {
      type: 'string',
      value: 'W',
      description: 'weeks the captures are spread over at every size, one partition each',
      default: '26',
    },
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed calls of each read, after one warm-up',
      default: '40',
    },
    rewrite: {
      type: 'string',
      value: 'yes|no',
      description: `also time adding a column with a volatile default, which rewrites the whole
        table (minutes at 10M)`,
      default: 'no',
    },
    'ingest-captures': {
      type: 'string',
      value: 'N',
      description: 'captures written through the CaptureWriter at each size',
      default: '50000',
    },
    phases: {
      type: 'string',
      value: 'LIST',
      description: `what to measure besides the reads: ingest, deploy (schema changes at the last
        size), retention (at the last size), comma-separated`,
      default: 'ingest,deploy,retention',
    },
  },
});
/** The migrations whose step 2 of a search the rare-search rows compare. */
const EVERY_WEEK_MIGRATION = '20261125101200_create_inspect_entries_rpc.sql';
const NEWEST_WEEKS_MIGRATION = '20261128131000_search_newest_weeks_first.sql';

const sizes = values.sizes.split(',').map(Number);
if (sizes.some((size, index) => !Number.isInteger(size) || size <= (sizes[index - 1] ?? 0))) {
  throw new Error('--sizes: whole numbers, ascending');
}
const weeks = Number(values.weeks);
const runs = Number(values.runs);
const ingestCaptures = Number(values['ingest-captures']);
const phases = new Set(values.phases.split(',').filter(Boolean));
for (const phase of phases) {
  if (!['ingest', 'deploy', 'retention'].includes(phase)) throw new Error(`--phases: no ${phase}`);
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  seed: false,
  proxy: false,
  toolServer: false,
  statusIntervalMs: 3_600_000,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();

interface ReadCase {
  name: string;
  actor: 'admin' | 'member';
  rpc: string;
  /** Arguments; a function for reads that depend on an earlier answer (the keyset cursor). */
  args:
    | Record<string, unknown>
    | (() => Promise<Record<string, unknown>> | Record<string, unknown>);
  select?: string;
}

try {
  const { userIds, deviceUuids } = await createBenchDevices(db, {
    users: 10,
    devicesPerUser: 5,
    weeks,
  });
  const adminId = userIds.at(-1) as string;
  const memberId = userIds[0] as string;
  const device = deviceUuids[0] as string; // the member's first device
  await db.query(
    `insert into public.user_roles (user_id, role_id) select $1, id from public.roles where slug = 'admin'`,
    [adminId],
  );
  const secret = new TextEncoder().encode(stack.keys.jwtSecret);
  const tokens = {
    admin: await tokenFor(adminId),
    member: await tokenFor(memberId),
  };
  function tokenFor(sub: string) {
    return new SignJWT({ sub, role: 'authenticated', aud: 'authenticated' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime('6h')
      .sign(secret);
  }
  async function callRpc(actor: 'admin' | 'member', rpc: string, args: object, select = '') {
    const response = await fetch(`${stack.apiUrl}/rest/v1/rpc/${rpc}${select}`, {
      method: 'POST',
      headers: {
        apikey: stack.keys.publishableKey,
        authorization: `Bearer ${tokens[actor]}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(args),
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`${rpc}: ${response.status} ${body.slice(0, 200)}`);
    return JSON.parse(body) as unknown;
  }
  const LIST_SELECT = '?select=id,ts,host,url,status_code';
  const newestPageLastId = async (actor: 'admin' | 'member') => {
    const page = (await callRpc(actor, 'entries_filtered_list', { lim: 50 }, LIST_SELECT)) as {
      id: number;
    }[];
    return page.at(-1)?.id;
  };
  const day = 86_400_000;
  const since = (ms: number) => new Date(Date.now() - ms).toISOString();
  const readCases: ReadCase[] = (['admin', 'member'] as const).flatMap((actor) => [
    {
      name: 'list, newest page',
      actor,
      rpc: 'entries_filtered_list',
      args: { lim: 50 },
      select: LIST_SELECT,
    },
    {
      name: 'list, keyset next page',
      actor,
      rpc: 'entries_filtered_list',
      args: async () => ({ lim: 50, before_id: await newestPageLastId(actor) }),
      select: LIST_SELECT,
    },
    {
      name: 'list, search "checkout" (common)',
      actor,
      rpc: 'entries_filtered_list',
      args: { lim: 50, search_q: 'checkout' },
      select: LIST_SELECT,
    },
    {
      name: 'list, search "orders/77" (rare)',
      actor,
      rpc: 'entries_filtered_list',
      args: { lim: 50, search_q: 'orders/77' },
      select: LIST_SELECT,
    },
    { name: 'count, no filter (estimated)', actor, rpc: 'entries_count', args: {} },
    {
      name: 'count, search "checkout" (estimated)',
      actor,
      rpc: 'entries_count',
      args: { search_q: 'checkout' },
    },
    {
      name: 'summarize_device_traffic, 24 h',
      actor,
      rpc: 'summarize_device_traffic',
      args: { target_uuid: device },
    },
    {
      name: 'summarize_device_traffic, 7 d',
      actor,
      rpc: 'summarize_device_traffic',
      args: () => ({ target_uuid: device, from_ts: since(7 * day), to_ts: since(0) }),
    },
  ]);
  readCases.push({ name: 'get_stats', actor: 'admin', rpc: 'get_stats', args: {} });

  const readTimings = new Map<string, Timing[]>();
  async function timeReadCase(readCase: ReadCase, size: number) {
    const args = typeof readCase.args === 'function' ? await readCase.args() : readCase.args;
    const timing = await timeCalls(async () => {
      await callRpc(readCase.actor, readCase.rpc, args, readCase.select);
    }, runs);
    const key = `${readCase.actor}: ${readCase.name}`;
    readTimings.set(key, [...(readTimings.get(key) ?? []), timing]);
    process.stderr.write(`${size} ${key}: ${timingCell(timing)}\n`);
  }
  const ingestRows: string[] = [];
  if (phases.has('ingest')) {
    const emptyIngest = await measureIngest(stack.dbUrl, db, {
      captures: ingestCaptures,
      deviceUuids,
      label: 'empty',
    });
    ingestRows.push(emptyIngest.row);
    process.stderr.write(`${emptyIngest.row}\n`);
  }
  let present = 0;
  const generation: string[] = [];
  for (const size of sizes) {
    const started = performance.now();
    // Each size from empty, in capture order: ids then follow time, as the proxy writes them
    // (growing the table instead would back-fill every past week, which looks like one large
    // import to a search that trusts ids to follow time).
    await emptyEntries(db);
    await insertBenchEntries(db, deviceUuids, {
      entries: size,
      weeks,
      onProgress: (inserted) => process.stderr.write(`\rgenerating ${inserted}/${size} entries`),
    });
    process.stderr.write('\n');
    present = size;
    // The steady state the jobs and autovacuum reach: hourly counters pruned, GIN pending lists
    // merged, visibility and statistics fresh.
    await db.query('select private.refresh_service_stats()');
    await db.query(
      'vacuum analyze public.entries, private.entry_counts_hourly, private.entry_counts_minutely',
    );
    const filledSeconds = (performance.now() - started) / 1000;
    const caughtUpSeconds = await realtimeCaughtUp(db);
    generation.push(
      `${size.toLocaleString('en')}: filled in ${filledSeconds.toFixed(0)} s; Realtime's ` +
        `decoding of the inserts caught up ${caughtUpSeconds.toFixed(0)} s later; ` +
        `entries ${await entriesSize(db)}`,
    );
    process.stderr.write(`${generation.at(-1)}\n`);
    for (const readCase of readCases) {
      await timeReadCase(readCase, size);
    }
    // The anchor in the same run, on the same data: the rare searches again with step 2 as it
    // was before 20261128131000 (every week's matches collected), then the current one back.
    await db.query(pageSqlOf(EVERY_WEEK_MIGRATION));
    for (const readCase of readCases.filter((one) => one.name.includes('(rare)'))) {
      await timeReadCase({ ...readCase, name: `${readCase.name}, every week (anchor)` }, size);
    }
    await db.query(pageSqlOf(NEWEST_WEEKS_MIGRATION));
    if (phases.has('ingest')) {
      const ingest = await measureIngest(stack.dbUrl, db, {
        captures: ingestCaptures,
        deviceUuids,
        label: size.toLocaleString('en'),
      });
      ingestRows.push(ingest.row);
      process.stderr.write(`${ingest.row}\n`);
    }
  }
  const deployCosts = phases.has('deploy')
    ? await measureDeployCosts(db, { rewrite: values.rewrite === 'yes' })
    : [];
  const retention = phases.has('retention')
    ? await measureRetentionUnderLoad(stack.dbUrl, db, {
        deviceUuids,
        weeks,
        read: () => callRpc('member', 'entries_filtered_list', { lim: 50 }, LIST_SELECT),
      })
    : [];

  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
  console.log(
    `captures over ${weeks} weeks on 50 devices (10 users x 5); the member owns 5 of them; ` +
      `times in ms through the gateway and PostgREST, ${runs} calls per case after a warm-up`,
  );
  for (const line of generation) console.log(`- ${line}`);
  console.log('');
  const sizeHeads = sizes.map((size) => `${(size / 1e6).toLocaleString('en')}M p50 / p95`);
  console.log(`| read | ${sizeHeads.join(' | ')} | growth of p95 |`);
  console.log(`|---|${sizes.map(() => '---|').join('')}---|`);
  for (const [key, timings] of readTimings) {
    const first = timings[0];
    const last = timings.at(-1);
    const growth = first && last ? `${(last.p95 / first.p95).toFixed(2)}x` : '–';
    console.log(`| ${key} | ${timings.map((t) => timingCell(t)).join(' | ')} | ${growth} |`);
  }
  console.log('');
  if (ingestRows.length > 0) {
    console.log('| ingest at | captures/s | stored / sent | batch p50 / p95 / max ms |');
    console.log('|---|---|---|---|');
    for (const row of ingestRows) console.log(row);
    console.log('');
  }
  if (deployCosts.length > 0) {
    console.log(
      `| change to entries at ${present.toLocaleString('en')} captures | seconds | blocks |`,
    );
    console.log('|---|---|---|');
    for (const line of deployCosts) console.log(line);
    console.log('');
  }
  if (retention.length > 0) {
    console.log(`retention at ${present.toLocaleString('en')} captures, dropping the oldest week:`);
    for (const line of retention) console.log(line);
  }
} finally {
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

/** The `private.entries_page_sql` definition in a migration, as one statement. */
function pageSqlOf(migration: string): string {
  const text = readFileSync(join(REPO_ROOT, 'supabase', 'migrations', migration), 'utf8');
  const start = text.search(/create (or replace )?function private\.entries_page_sql\(/);
  const end = text.indexOf('$$;', start);
  if (start < 0 || end < 0) throw new Error(`no entries_page_sql in ${migration}`);
  return text.slice(start, end + 3).replace(/^create function/, 'create or replace function');
}

/**
 * No captures, and the running counts that the statement triggers keep (service stats) back at
 * zero: TRUNCATE fires no delete trigger. Cascade: workspace and tag rows reference captures
 * (the bench makes none).
 */
async function emptyEntries(client: pg.Client): Promise<void> {
  await client.query(
    `truncate public.entries, private.entry_count_deltas, private.entry_counts_minutely,
       private.entry_counts_hourly cascade;
     update private.entry_totals set entries = 0`,
  );
}

/**
 * Waits until every logical replication slot (the Realtime service's WAL stream, which decodes
 * each inserted capture for postgres_changes) has confirmed the WAL written so far, so reads are
 * timed in the steady state and not beside a decoding backlog; returns the seconds waited.
 */
async function realtimeCaughtUp(client: pg.Client): Promise<number> {
  const started = performance.now();
  const { rows } = await client.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
  const target = rows[0]?.lsn;
  // A commit after the target, so a decoder that has read everything confirms past it even when
  // the WAL before it ends in records it does not report (a vacuum's).
  await client.query(`select pg_logical_emit_message(true, 'bench-scale', 'caught up?')`);
  for (let waited = 0; ; waited += 1) {
    if (waited > 3_600) throw new Error('the logical slots did not catch up within an hour');
    const { rows: behind } = await client.query<{ behind: number }>(
      `select count(*)::int as behind from pg_replication_slots
       where slot_type = 'logical' and (confirmed_flush_lsn is null or confirmed_flush_lsn < $1::pg_lsn)`,
      [target],
    );
    if ((behind[0]?.behind ?? 0) === 0) return (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function entriesSize(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ size: string }>(
    `select pg_size_pretty(sum(pg_total_relation_size(i.inhrelid))) as size
     from pg_inherits i where i.inhparent = 'public.entries'::regclass`,
  );
  return `${rows[0]?.size ?? '?'} on disk with indexes`;
}
