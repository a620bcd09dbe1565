// Benchmark of the entry search RPCs at N entries: p50/p95 of
// entries_filtered_list (search term, host filter, page 100 by keyset) and entries_filtered_count
// through the gateway and PostgREST, beside the same reads written naively on payload->>
// (001 §4.2 rule 1), as an admin (sees all) and a scoped user (own devices only).
// Run: npm run bench:entries -- [--entries 1000000] [--runs 40] [--naive-runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { GENERATED_CAPTURE_FLAGS, prepareBenchEntries } from './entries-generator.ts';
import { percentile } from './percentile.ts';

const { values } = parseBenchArgs({
  name: 'bench:entries',
  measures: `The entry search RPCs at N generated entries, through the gateway and PostgREST with a
    user's JWT, as an admin (sees all) and a scoped user (own devices only): p50/p95 of
    entries_filtered_list (a search term, a host filter, page 100 by keyset) and of
    entries_filtered_count.`,
  comparedWith: `the same reads written naively on payload->> as plain REST in the same run
    (payload->>url=ilike.*term*, payload->>host=eq.…, offset= paging, Prefer: count=exact); the
    ratio is naive p50 over RPC p50. Goal: p95 under 50 ms and at least 20x the naive form
    (docs/data-model.md, "Benchmark").`,
  flags: {
    ...GENERATED_CAPTURE_FLAGS,
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed calls of each RPC case, after one warm-up',
      default: '40',
    },
    'naive-runs': {
      type: 'string',
      value: 'N',
      description:
        'timed calls of each naive payload->> case, after one warm-up; fewer, as they are slow',
      default: '5',
    },
  },
});
const runs = Number(values.runs);
const naiveRuns = Number(values['naive-runs']);

interface Case {
  name: string;
  request: () => Promise<Response>;
  naive?: () => Promise<Response>;
}

async function measure(request: () => Promise<Response>, count: number) {
  await (await request()).arrayBuffer(); // warm-up
  const times: number[] = [];
  let failures = 0;
  let lastError = '';
  for (let run = 0; run < count; run += 1) {
    const started = performance.now();
    const response = await request();
    const body = await response.text();
    times.push(performance.now() - started);
    if (!response.ok) {
      failures += 1;
      lastError = `${response.status} ${body.slice(0, 120)}`;
    }
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95), failures, lastError };
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-entries-'));
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
    { name: 'scoped user', token: await tokenFor(data.userIds[0] as string) },
  ];

  const rows: string[] = [];
  for (const actor of actors) {
    const headers = { apikey: actor.token, authorization: `Bearer ${actor.token}` };
    const rpc = (name: string, args: object) => () =>
      fetch(
        `${stack.apiUrl}/rest/v1/rpc/${name}${name.endsWith('_list') ? '?select=id,ts,host,url' : ''}`,
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(args),
        },
      );
    const get =
      (query: string, extra: Record<string, string> = {}) =>
      () =>
        fetch(`${stack.apiUrl}/rest/v1/entries?${query}`, { headers: { ...headers, ...extra } });
    const pageSize = 50;
    // The cursor of page 100: the last id of page 99, as a client walking pages would hold it.
    let beforeId: number | undefined;
    for (let page = 1; page <= 99; page += 1) {
      const response = await rpc('entries_filtered_list', { before_id: beforeId, lim: pageSize })();
      const entries = (await response.json()) as Array<{ id: number }>;
      beforeId = entries.at(-1)?.id;
    }
    const cases: Case[] = [
      {
        name: 'list, search "checkout"',
        request: rpc('entries_filtered_list', { search_q: 'checkout', lim: pageSize }),
        naive: get(
          `select=id,ts,host,url&payload->>url=ilike.*checkout*&order=id.desc&limit=${pageSize}`,
        ),
      },
      {
        name: 'list, search "no-such-term"',
        request: rpc('entries_filtered_list', { search_q: 'no-such-term', lim: pageSize }),
        naive: get(
          `select=id,ts,host,url&payload->>url=ilike.*no-such-term*&order=id.desc&limit=${pageSize}`,
        ),
      },
      {
        name: 'list, host api.shop.example (busiest)',
        request: rpc('entries_filtered_list', { hosts: ['api.shop.example'], lim: pageSize }),
        naive: get(
          `select=id,ts,host,url&payload->>host=eq.api.shop.example&order=id.desc&limit=${pageSize}`,
        ),
      },
      {
        name: 'list, host img.branch.io (rare)',
        request: rpc('entries_filtered_list', { hosts: ['img.branch.io'], lim: pageSize }),
        naive: get(
          `select=id,ts,host,url&payload->>host=eq.img.branch.io&order=id.desc&limit=${pageSize}`,
        ),
      },
      {
        name: 'list, page 100 by keyset',
        request: rpc('entries_filtered_list', { before_id: beforeId, lim: pageSize }),
        naive: get(`select=id,ts,host,url&order=id.desc&offset=${pageSize * 99}&limit=${pageSize}`),
      },
      {
        name: 'count, search "checkout"',
        request: rpc('entries_filtered_count', { search_q: 'checkout' }),
        naive: get('select=id&payload->>url=ilike.*checkout*&limit=1', { prefer: 'count=exact' }),
      },
      {
        name: 'count, host api.shop.example',
        request: rpc('entries_filtered_count', { hosts: ['api.shop.example'] }),
        naive: get('select=id&payload->>host=eq.api.shop.example&limit=1', {
          prefer: 'count=exact',
        }),
      },
    ];
    for (const benchCase of cases) {
      const fast = await measure(benchCase.request, runs);
      const naive = benchCase.naive ? await measure(benchCase.naive, naiveRuns) : undefined;
      const ratio = naive ? (naive.p50 / fast.p50).toFixed(1) : '–';
      const naiveCell = naive
        ? `${naive.p50.toFixed(1)} / ${naive.p95.toFixed(1)}${naive.failures ? ` (${naive.failures} failed: ${naive.lastError})` : ''}`
        : '–';
      rows.push(
        `| ${actor.name} | ${benchCase.name} | ${fast.p50.toFixed(1)} / ${fast.p95.toFixed(1)}${fast.failures ? ` (${fast.failures} failed: ${fast.lastError})` : ''} | ${naiveCell} | ${ratio}x |`,
      );
      process.stderr.write(`${rows.at(-1)}\n`);
    }
  }
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
  console.log(
    `entries: ${total} over ${values.weeks} weeks, 10 users x 5 devices; generated in ${generationSeconds.toFixed(0)} s`,
  );
  console.log(`runs: ${runs} per RPC case, ${naiveRuns} per naive case; times in ms via gateway`);
  console.log('| caller | case | RPC p50 / p95 | naive p50 / p95 | naive/RPC (p50) |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
