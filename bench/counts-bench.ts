// Benchmark of the entry counts the dashboard asks:
// p50/p95 of entries_count (exact up to 1000, a flagged estimate above) beside the exact count of
// the same filter in the same run (entries_filtered_count where it takes the filter, else
// entries_count with exact => true), as an admin (every row) and a member (own devices), through
// the gateway and PostgREST. For estimates it also reports how far they fell from the exact count.
// Run: npm run bench:counts -- [--entries 1000000] [--runs 40] [--exact-runs 10]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { GENERATED_CAPTURE_FLAGS, prepareBenchEntries } from './entries-generator.ts';
import { percentile } from './percentile.ts';

const { values } = parseBenchArgs({
  name: 'bench:counts',
  measures: `The entry counts the dashboard asks, at N generated entries, through the gateway and
    PostgREST, as an admin (every row) and a member (own devices): p50/p95 of entries_count (exact
    up to 1000, a flagged estimate above), and for estimates how far they fell from the exact count
    (median and worst). It prints the machine's load at the start and the end.`,
  comparedWith: `the exact count of the same filter in the same run: entries_filtered_count where
    it takes the filter, else entries_count with exact => true (marked †). Goal: p95 under 50 ms
    for every count, exact when small (docs/data-model.md, "Counts").`,
  flags: {
    ...GENERATED_CAPTURE_FLAGS,
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed entries_count calls per case, after one warm-up',
      default: '40',
    },
    'exact-runs': {
      type: 'string',
      value: 'N',
      description: 'timed exact-count calls per case (the anchor), after one warm-up',
      default: '10',
    },
  },
});
const runs = Number(values.runs);
const exactRuns = Number(values['exact-runs']);

type Call = () => Promise<Response>;

interface Measured {
  p50: number;
  p95: number;
  answers: unknown[];
}

/** One warm-up call, then `count` timed calls in a row; any non-2xx answer stops the bench. */
async function measure(call: Call, count: number): Promise<Measured> {
  await (await call()).arrayBuffer();
  const times: number[] = [];
  const answers: unknown[] = [];
  for (let run = 0; run < count; run += 1) {
    const started = performance.now();
    const response = await call();
    const body = await response.text();
    times.push(performance.now() - started);
    if (!response.ok) throw new Error(`${response.status} ${body.slice(0, 200)}`);
    answers.push(JSON.parse(body));
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95), answers };
}

interface Flagged {
  count: number;
  exact: boolean;
}

/** "exact" when every answer was, else the estimates' median and worst error against `truth`. */
function describeAnswers(answers: Flagged[], truth: number): string {
  if (answers.every((answer) => answer.exact)) {
    const wrong = answers.filter((answer) => answer.count !== truth).length;
    return wrong ? `exact, ${wrong} answers ≠ ${truth}` : 'exact';
  }
  const errors = answers
    .map((answer) => (Math.abs(answer.count - truth) / truth) * 100)
    .sort((a, b) => a - b);
  const flagged = answers.filter((answer) => !answer.exact).length;
  return `estimate (${flagged}/${answers.length}): error median ${percentile(errors, 50).toFixed(1)} %, worst ${(errors.at(-1) ?? 0).toFixed(1)} %`;
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-counts-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  seed: false,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
try {
  const total = Number(values.entries);
  const { data, adminId, generationSeconds } = await prepareBenchEntries(db, {
    entries: total,
    weeks: Number(values.weeks),
  });

  const secret = new TextEncoder().encode(stack.keys.jwtSecret);
  const tokenFor = (sub: string) =>
    new SignJWT({ sub, role: 'authenticated', aud: 'authenticated' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime('2h')
      .sign(secret);
  const actors = [
    { name: 'admin', token: await tokenFor(adminId) },
    { name: 'member', token: await tokenFor(data.userIds[0] as string) },
  ];
  // The member's first device (1/50 of the captures); the admin asks about the same one.
  const device = data.deviceUuids[0] as string;
  const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
  const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString();
  // `old`: the same filter for entries_filtered_count, where that RPC takes it.
  const cases: Array<{ name: string; args: Record<string, unknown>; old?: object }> = [
    { name: 'no filter', args: {}, old: {} },
    { name: 'a device', args: { device_uuids: [device] }, old: { device_uuids: [device] } },
    {
      name: 'host api.shop.example (busiest)',
      args: { hosts: ['api.shop.example'] },
      old: { hosts: ['api.shop.example'] },
    },
    {
      name: 'search "checkout" (common)',
      args: { search_q: 'checkout' },
      old: { search_q: 'checkout' },
    },
    { name: 'search "branch"', args: { search_q: 'branch' }, old: { search_q: 'branch' } },
    {
      name: 'search "orders/77" (rare)',
      args: { search_q: 'orders/77' },
      old: { search_q: 'orders/77' },
    },
    {
      name: 'search "no-such-term"',
      args: { search_q: 'no-such-term' },
      old: { search_q: 'no-such-term' },
    },
    { name: 'status 5xx', args: { status_classes: [5] } },
    { name: 'last 24 h', args: { from_ts: dayAgo } },
    { name: 'last 7 days', args: { from_ts: weekAgo } },
    {
      name: 'a device, 4xx, last 7 days',
      args: { device_uuids: [device], status_classes: [4], from_ts: weekAgo },
    },
  ];

  const rows: string[] = [];
  // The machine may be shared: the load beside the figures says how quiet the run was.
  const loadAtStart = loadavg()[0]?.toFixed(1);
  for (const actor of actors) {
    const headers = {
      apikey: actor.token,
      authorization: `Bearer ${actor.token}`,
      'content-type': 'application/json',
    };
    const rpc =
      (name: string, args: object): Call =>
      () =>
        fetch(`${stack.apiUrl}/rest/v1/rpc/${name}`, {
          method: 'POST',
          headers,
          body: JSON.stringify(args),
        });
    for (const benchCase of cases) {
      const fast = await measure(rpc('entries_count', benchCase.args), runs);
      const exact = benchCase.old
        ? await measure(rpc('entries_filtered_count', benchCase.old), exactRuns)
        : await measure(rpc('entries_count', { ...benchCase.args, exact: true }), exactRuns);
      const truth = benchCase.old ? Number(exact.answers[0]) : (exact.answers[0] as Flagged).count;
      const answers = describeAnswers(fast.answers as Flagged[], truth);
      rows.push(
        `| ${actor.name} | ${benchCase.name} | ${truth} | ${fast.p50.toFixed(1)} / ${fast.p95.toFixed(1)} | ${answers} | ${exact.p50.toFixed(1)} / ${exact.p95.toFixed(1)}${benchCase.old ? '' : ' †'} | ${(exact.p50 / fast.p50).toFixed(1)}x |`,
      );
      process.stderr.write(`${rows.at(-1)}\n`);
    }
  }
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
  console.log(
    `entries: ${total} over ${values.weeks} weeks, 10 users x 5 devices; generated in ${generationSeconds.toFixed(0)} s`,
  );
  console.log(
    `runs: ${runs} per entries_count case, ${exactRuns} per exact case; times in ms via gateway; 1-minute load ${loadAtStart} at start, ${loadavg()[0]?.toFixed(1)} at end`,
  );
  console.log(
    '| caller | case | exact count | entries_count p50 / p95 | answer | exact p50 / p95 (entries_filtered_count; † entries_count exact) | exact/new (p50) |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
