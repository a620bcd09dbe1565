// Benchmark of the traffic-tool RPCs (MCP tools summarize_device_traffic and inspect_requests) at
// N entries: p50/p95 of summarize_device_traffic (24 h, 7 d and 31 d windows) and inspect_entries
// (a page of 50, with and without filters), as an admin and as a scoped member, on the tool
// server's path (a pooled Postgres connection, `set role authenticated` plus the caller's claims)
// and through the gateway and PostgREST; beside entries_filtered_list on the same data, and the
// summary computed from payload->> instead of the native columns.
// Run: node bench/traffic-tools-bench.ts [--entries 1000000] [--weeks 26] [--runs 40]
//   [--naive-runs 10] [--users 3] [--devices-per-user 2] [--body-bytes 0]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { GENERATED_CAPTURE_FLAGS, generateBenchData } from './entries-generator.ts';
import { type Timing, timeCalls, timingCell } from './timed-calls.ts';

const { values } = parseBenchArgs({
  name: 'bench:traffic',
  measures: `The traffic-tool RPCs at N generated entries, as an admin and as the member who owns the
    summarized device: p50/p95 of summarize_device_traffic (24 h, 7 d and 31 d windows) and
    inspect_entries (a page of 50, with and without filters), on the tool server's path (one
    pooled connection: begin, role authenticated with the caller's claims, the call, end of
    transaction) and through the gateway and PostgREST.`,
  comparedWith: `in the same run, on the same data and path: inspect_entries beside
    entries_filtered_list, and the summary beside the same function reading payload->> instead of
    the native columns (a copy the bench makes). Goal: p95 under 100 ms at 1M entries
    (docs/data-model.md, "Traffic tools").`,
  flags: {
    ...GENERATED_CAPTURE_FLAGS,
    users: {
      type: 'string',
      value: 'N',
      description: `users owning the captures; 3 users x 2 devices leave about 1/6 of them on each
        device, so the summarized one is busy`,
      default: '3',
    },
    'devices-per-user': {
      type: 'string',
      value: 'N',
      description: 'devices each user has',
      default: '2',
    },
    'body-bytes': {
      type: 'string',
      value: 'B',
      description: `response-body bytes per capture: 0 keeps payloads inline (~0.5 kB); 4096 stores
        them out of line, as real captures with bodies are, which is what payload->> pays for`,
      default: '0',
    },
    runs: {
      type: 'string',
      value: 'N',
      description:
        'timed calls per case on each path and of entries_filtered_list, after one warm-up',
      default: '40',
    },
    'naive-runs': {
      type: 'string',
      value: 'N',
      description: 'timed calls of the payload->> summary per case, after one warm-up',
      default: '10',
    },
  },
});
const runs = Number(values.runs);
const naiveRuns = Number(values['naive-runs']);

const cell = (timing: Timing | undefined) => timingCell(timing);

const dataDir = mkdtempSync(join(tmpdir(), 'bench-traffic-tools-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  seed: false,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
// The tool server's own connection (one pooled client is what a single tool call holds).
const toolDb = new pg.Client({ connectionString: stack.dbUrl });
await toolDb.connect();
try {
  const total = Number(values.entries);
  const generationStarted = performance.now();
  const data = await generateBenchData(db, {
    entries: total,
    weeks: Number(values.weeks),
    users: Number(values.users),
    devicesPerUser: Number(values['devices-per-user']),
    bodyBytes: Number(values['body-bytes']),
    onProgress: (inserted) => process.stderr.write(`\rgenerated ${inserted}/${total} entries`),
  });
  process.stderr.write('\n');
  // Steady state: the service-stats job has pruned the hourly counters the back-dated captures
  // left (two runs without this had calls stall ~0.9 s early on), and autovacuum has merged GIN
  // pending lists, set visibility and statistics.
  await db.query('select private.refresh_service_stats()');
  await db.query(
    'vacuum analyze public.entries, private.entry_counts_hourly, private.entry_counts_minutely',
  );
  const generationSeconds = (performance.now() - generationStarted) / 1000;
  const adminId = data.userIds.at(-1) as string;
  const memberId = data.userIds[0] as string;
  const device = data.deviceUuids[0] as string; // the member's first device
  await db.query(
    `insert into public.user_roles (user_id, role_id) select $1, id from public.roles where slug = 'admin'`,
    [adminId],
  );
  const { rows: shares } = await db.query<{ share: string; payload: string }>(
    `select round(100.0 * count(*) filter (where device_uuid = $1) / count(*), 1) as share,
            round(avg(pg_column_size(payload))) as payload
     from public.entries`,
    [device],
  );

  // The summary from payload->> (001 §4.2 rule 1's slow form): the RPC's own definition with the
  // native columns of its window swapped for the payload fields they are generated from.
  const { rows: definition } = await db.query<{ def: string }>(
    `select pg_get_functiondef('public.summarize_device_traffic(uuid, timestamptz, timestamptz)'::regprocedure) as def`,
  );
  const swaps: Array<[string, string]> = [
    ['public.summarize_device_traffic(', 'private.bench_summary_from_payload('],
    [
      "e.kind <> 'error' and e.status_code >= 500",
      "e.kind <> 'error' and (e.payload ->> 'statusCode')::int >= 500",
    ],
    ['e.id, e.ts, e.method, ', "e.id, e.ts, e.payload ->> 'method' as method, "],
    [
      'e.status_code, e.duration_ms,',
      "(e.payload ->> 'statusCode')::smallint as status_code, " +
        "(e.payload -> 'timings' ->> 'total')::float8 as duration_ms,",
    ],
    [
      'e.request_bytes, e.response_bytes,',
      "(e.payload -> 'sizes' ->> 'requestBody')::bigint as request_bytes, " +
        "(e.payload -> 'sizes' ->> 'responseBody')::bigint as response_bytes,",
    ],
  ];
  let naiveDefinition = definition[0]?.def ?? '';
  for (const [from, to] of swaps) {
    if (!naiveDefinition.includes(from)) throw new Error(`summary definition lacks ${from}`);
    naiveDefinition = naiveDefinition.replace(from, to);
  }
  await db.query(naiveDefinition);
  await db.query(
    'grant execute on function private.bench_summary_from_payload(uuid, timestamptz, timestamptz) to authenticated',
  );

  const secret = new TextEncoder().encode(stack.keys.jwtSecret);
  const actors = await Promise.all(
    [
      { name: 'admin', sub: adminId },
      { name: 'scoped member', sub: memberId },
    ].map(async (actor) => {
      const claims = { sub: actor.sub, role: 'authenticated', aud: 'authenticated' };
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setExpirationTime('2h')
        .sign(secret);
      return { ...actor, claims, token };
    }),
  );

  interface Case {
    name: string;
    rpc: string;
    args: Record<string, unknown>;
    /** entries_filtered_list arguments of the same read, where one exists. */
    baseline?: Record<string, unknown>;
    naive?: boolean;
  }
  const day = 24 * 3600 * 1000;
  // Windows end when the data does, so a 31-day window stays 31 days however long the run takes.
  const windowEnd = new Date();
  const since = (ms: number) => new Date(windowEnd.getTime() - ms).toISOString();
  const until = windowEnd.toISOString();
  const cases: Case[] = [
    {
      name: 'summary, 24 h',
      rpc: 'summarize_device_traffic',
      args: { target_uuid: device },
      naive: true,
    },
    {
      name: 'summary, 7 d',
      rpc: 'summarize_device_traffic',
      args: { target_uuid: device, from_ts: since(7 * day), to_ts: until },
      naive: true,
    },
    {
      name: 'summary, 31 d (the longest window)',
      rpc: 'summarize_device_traffic',
      args: { target_uuid: device, from_ts: since(31 * day), to_ts: until },
      naive: true,
    },
    { name: 'inspect, page of 50', rpc: 'inspect_entries', args: {}, baseline: {} },
    {
      name: 'inspect, one device',
      rpc: 'inspect_entries',
      args: { device_uuids: [device] },
      baseline: { device_uuids: [device] },
    },
    {
      name: 'inspect, search "checkout"',
      rpc: 'inspect_entries',
      args: { search_q: 'checkout' },
      baseline: { search_q: 'checkout' },
    },
    {
      name: 'inspect, search "no-such-term"',
      rpc: 'inspect_entries',
      args: { search_q: 'no-such-term' },
      baseline: { search_q: 'no-such-term' },
    },
    { name: 'inspect, 5xx', rpc: 'inspect_entries', args: { status_classes: [5] } },
    {
      name: 'inspect, one device, POST, 4xx, last 24 h',
      rpc: 'inspect_entries',
      args: { device_uuids: [device], methods: ['POST'], status_classes: [4], from_ts: since(day) },
    },
    {
      name: 'inspect, 1xx (no match: rare path)',
      rpc: 'inspect_entries',
      args: { status_classes: [1] },
    },
    {
      name: 'inspect, search "checkout", POST, 5xx (sparse)',
      rpc: 'inspect_entries',
      args: { search_q: 'checkout', methods: ['POST'], status_classes: [5] },
    },
    {
      name: 'inspect, DELETE, 5xx, 200 rows',
      rpc: 'inspect_entries',
      args: { methods: ['DELETE'], status_classes: [5], lim: 200 },
    },
  ];

  const rows: string[] = [];
  for (const actor of actors) {
    const headers = {
      apikey: actor.token,
      authorization: `Bearer ${actor.token}`,
      'content-type': 'application/json',
    };
    // PostgREST: the RPC as an HTTP client calls it; a non-2xx answer is a failure.
    const viaRest = (rpc: string, args: Record<string, unknown>) => async () => {
      const select = rpc === 'entries_filtered_list' ? '?select=id,ts,host,url' : '';
      const response = await fetch(`${stack.apiUrl}/rest/v1/rpc/${rpc}${select}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(args),
      });
      const body = await response.text();
      if (!response.ok) throw new Error(`${response.status} ${body}`);
    };
    // The tool server's path (packages/tool-server store asCaller): one transaction on its own
    // connection, role and claims set, the call, commit.
    const viaTool =
      (rpc: string, args: Record<string, unknown>, schema = 'public') =>
      async () => {
        const names = Object.keys(args);
        const call = `${schema}.${rpc}(${names.map((name, i) => `${name} => $${i + 1}`).join(', ')})`;
        const sql =
          rpc === 'summarize_device_traffic' || schema === 'private'
            ? `select ${call}`
            : rpc === 'entries_filtered_list'
              ? `select id, ts, host, url from ${call}`
              : `select * from ${call}`;
        await toolDb.query('begin');
        try {
          await toolDb.query(
            `select set_config('role', 'authenticated', true),
                  set_config('request.jwt.claims', $1, true),
                  set_config('statement_timeout', '8s', true)`,
            [JSON.stringify(actor.claims)],
          );
          await toolDb.query(
            sql,
            names.map((name) => args[name]),
          );
        } finally {
          await toolDb.query('rollback');
        }
      };
    for (const benchCase of cases) {
      const tool = await timeCalls(viaTool(benchCase.rpc, benchCase.args), runs);
      const rest = await timeCalls(viaRest(benchCase.rpc, benchCase.args), runs);
      let extra = '–';
      let ratio = '–';
      if (benchCase.baseline) {
        const baseline = await timeCalls(
          viaTool('entries_filtered_list', benchCase.baseline),
          runs,
        );
        extra = `entries_filtered_list ${cell(baseline)}`;
        ratio = `${(tool.p50 / baseline.p50).toFixed(2)}x the list`;
      } else if (benchCase.naive) {
        const naive = await timeCalls(
          viaTool('bench_summary_from_payload', benchCase.args, 'private'),
          naiveRuns,
        );
        extra = `from payload->> ${cell(naive)}`;
        ratio = `${(naive.p50 / tool.p50).toFixed(1)}x faster`;
      }
      rows.push(
        `| ${actor.name} | ${benchCase.name} | ${cell(tool)} | ${cell(rest)} | ${extra} | ${ratio} |`,
      );
      process.stderr.write(`${rows.at(-1)}\n`);
    }
  }
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
  console.log(
    `entries: ${total} over ${values.weeks} weeks, ${values.users} users x ${values['devices-per-user']} devices ` +
      `(the summarized device holds ${shares[0]?.share ?? '?'} %), payload ${shares[0]?.payload ?? '?'} bytes ` +
      `stored on average; generated in ${generationSeconds.toFixed(0)} s`,
  );
  console.log(
    `runs: ${runs} per case (${naiveRuns} for payload->>); times in ms; tool path = one pooled ` +
      'connection, set role + claims, call, end of transaction; REST = gateway and PostgREST',
  );
  console.log(
    '| caller | case | tool path p50 / p95 | REST p50 / p95 | compared with (tool path p50 / p95) | ratio (p50) |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  await toolDb.end();
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
