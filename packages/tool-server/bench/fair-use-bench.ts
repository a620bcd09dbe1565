// Benchmark of fair use (docs/tool-server.md "Fair use"): an admin's tool calls and another user's
// REST reads while one member floods inspect_requests searches (waves of concurrent calls), with
// fair use off (the pool's first-come queue, as before it existed) and on (the defaults), in one
// run on one database; beside the same flood sent straight to PostgREST, the yardstick for what
// one member can already do to others through REST. The flood runs in a worker thread, so its own
// client work does not share the in-process servers' event loop (an attacker is elsewhere); the
// admin and the REST reader start once its first wave is out and go on until it is over. The four
// scenarios run in turn, `rounds` times, and each one's results are pooled.
// Run: npm run bench:fair-use -- [--entries 1000000] [--waves 3] [--flood 500] [--rounds 3]
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { GENERATED_CAPTURE_FLAGS, prepareBenchEntries } from '../../../bench/entries-generator.ts';
import { percentile } from '../../../bench/percentile.ts';
import { startStack } from '../../stack/src/index.ts';
import { findFreePort } from '../../stack/src/ports.ts';
import { startToolServer } from '../src/index.ts';
import { mintAccessToken } from './bench-tokens.ts';
import { postToolCall, toolCallFailed } from './mcp-post.ts';

const { values } = parseBenchArgs({
  name: 'bench:fair-use',
  measures: `Fair use at N generated entries: an admin's tool calls (a wave of 2 searches and 4
    other calls each second) and another user's REST reads while one member floods
    inspect_requests searches from a worker thread, with fair use off (the pool's first-come
    queue, as before it existed) and on (the defaults), on one database: ok / 429 / failed counts
    and p50/p95 for each party. The scenarios run in turn, round after round, results pooled.`,
  comparedWith: `the no-flood scenario, and the same flood sent straight to PostgREST
    (rpc/inspect_entries), the yardstick for what one member can already do to others through
    REST; all in the same run (docs/tool-server.md, "Benchmark: npm run bench:fair-use").`,
  flags: {
    ...GENERATED_CAPTURE_FLAGS,
    waves: {
      type: 'string',
      value: 'N',
      description: "waves of the member's flood, each sent once the previous one has answered",
      default: '3',
    },
    flood: {
      type: 'string',
      value: 'N',
      description: 'concurrent inspect_requests searches in each wave',
      default: '500',
    },
    rounds: {
      type: 'string',
      value: 'N',
      description: 'times the four scenarios run in turn; their results are pooled',
      default: '3',
    },
  },
});
const waves = Number(values.waves);
const floodSize = Number(values.flood);
const rounds = Number(values.rounds);
/**
 * The admin's agent: a wave of its six calls at once (within the per-token limit of 8) each
 * second (within the rate of 10 a second), five waves without a flood.
 */
const QUIET_ADMIN_WAVES = 5;
const ADMIN_WAVE_MS = 1_000;
const SEARCH = 'checkout';

type Outcome = 'ok' | 'refused' | 'failed';

interface Timed {
  ms: number;
  outcome: Outcome;
}

/**
 * The member's flood as the worker is told it (a worker does not see the command line): waves of
 * concurrent searches, as MCP tool calls or straight to REST.
 */
interface FloodOrder {
  via: 'tools/call' | 'rest';
  base: string;
  token: string;
  waves: number;
  size: number;
}

/** A body's verdict: 429 is a refusal; an error, a tool error or anything else not 200 failed. */
function outcomeOf(status: number, body: string): Outcome {
  if (status === 429) return 'refused';
  if (status !== 200) return 'failed';
  return toolCallFailed(body) ? 'failed' : 'ok';
}

async function timed(request: () => Promise<Response>): Promise<Timed> {
  const started = performance.now();
  try {
    const response = await request();
    const body = await response.text();
    return { ms: performance.now() - started, outcome: outcomeOf(response.status, body) };
  } catch {
    return { ms: performance.now() - started, outcome: 'failed' };
  }
}

function toolCall(base: string, token: string, name: string, args: object) {
  return () => postToolCall(`${base}/`, token, name, args);
}

function restCall(apiUrl: string, token: string, fn: string, args: object) {
  return () =>
    fetch(`${apiUrl}/rest/v1/rpc/${fn}`, {
      method: 'POST',
      headers: {
        apikey: token,
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(args),
    });
}

/** The worker's part: the order's waves of concurrent searches from the member; says when the
 *  first wave is out, then sends the results. */
async function floodFrom(order: FloodOrder): Promise<Timed[]> {
  const call =
    order.via === 'tools/call'
      ? toolCall(order.base, order.token, 'inspect_requests', { search: SEARCH, limit: 50 })
      : restCall(order.base, order.token, 'inspect_entries', { search_q: SEARCH, lim: 50 });
  const results: Timed[] = [];
  for (let wave = 0; wave < order.waves; wave += 1) {
    const sent = Promise.all(Array.from({ length: order.size }, () => timed(call)));
    if (wave === 0) parentPort?.postMessage('started');
    results.push(...(await sent));
  }
  return results;
}

/** The member's flood from a worker thread: once its first wave is out, and when it is over. */
async function flood(order: FloodOrder) {
  const worker = new Worker(new URL(import.meta.url), { workerData: order });
  await once(worker, 'message');
  const started = performance.now();
  const done = once(worker, 'message').then(async ([results]) => {
    await worker.terminate();
    return { results: results as Timed[], s: (performance.now() - started) / 1000 };
  });
  return { done };
}

function summary(results: Timed[]) {
  const times = results.map((result) => result.ms).sort((a, b) => a - b);
  const count = (outcome: Outcome) => results.filter((result) => result.outcome === outcome).length;
  return {
    n: results.length,
    ok: count('ok'),
    refused: count('refused'),
    failed: count('failed'),
    p50: percentile(times, 50),
    p95: percentile(times, 95),
  };
}

interface Pooled {
  adminSearches: Timed[];
  adminOthers: Timed[];
  rest: Timed[];
  attack: Timed[];
  seconds: number[];
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-fair-use-'));
  const logger = pino({ level: 'error' });
  const stack = await startStack({
    dataDir,
    ports: 'free',
    ephemeral: true,
    seed: false,
    proxy: false,
    logger,
  });
  const db = new pg.Client({ connectionString: stack.dbUrl });
  await db.connect();
  const beforePort = await findFreePort();
  const beforeUrl = `http://127.0.0.1:${beforePort}`;
  // The tool server as it was: no limits, and the pool's own first-come queue.
  const before = await startToolServer(
    {
      origins: [beforeUrl],
      listen: [{ host: '127.0.0.1', port: beforePort }],
      dashboardUrl: 'http://127.0.0.1:1',
      dbUrl: stack.dbUrl,
      supabaseUrl: stack.apiUrl,
      jwtSecret: stack.keys.jwtSecret,
      buildNumber: 'bench-before',
      toolCalls: { fairUse: false },
    },
    logger,
  );
  try {
    const { data, adminId } = await prepareBenchEntries(db, {
      entries: Number(values.entries),
      weeks: Number(values.weeks),
    });
    const memberId = data.userIds[0] as string;
    const tokenAt = (base: string, userId: string) =>
      mintAccessToken(db, { mcpUrl: base, keys: stack.keys }, userId);
    const readerToken = await tokenAt(stack.mcpUrl, data.userIds[1] as string);
    const devices = await db.query<{ uuid: string }>(
      'select uuid from public.devices where owner_user_id = $1 order by uuid limit 1',
      [adminId],
    );
    const adminDevice = devices.rows[0]?.uuid as string;

    /**
     * The admin's calls, six at a time, its searches and its other calls apart: waves until `until`
     * settles, and at least `minWaves`.
     */
    async function adminAgent(
      base: string,
      token: string,
      until: Promise<unknown>,
      minWaves: number,
    ) {
      let over = false;
      void until.then(() => {
        over = true;
      });
      const searches = [
        toolCall(base, token, 'inspect_requests', { search: SEARCH, limit: 20 }),
        toolCall(base, token, 'inspect_requests', { search: 'api', limit: 20 }),
      ];
      const others = [
        toolCall(base, token, 'inspect_requests', { limit: 20 }),
        toolCall(base, token, 'list_devices', {}),
        toolCall(base, token, 'get_stats', {}),
        toolCall(base, token, 'summarize_device_traffic', { device_uuid: adminDevice }),
      ];
      const results = { searches: [] as Timed[], others: [] as Timed[] };
      for (let wave = 0; wave < minWaves || !over; wave += 1) {
        const waveStarted = performance.now();
        const [searched, other] = await Promise.all([
          Promise.all(searches.map(timed)),
          Promise.all(others.map(timed)),
        ]);
        results.searches.push(...searched);
        results.others.push(...other);
        const pause = ADMIN_WAVE_MS - (performance.now() - waveStarted);
        if (pause > 0 && (wave + 1 < minWaves || !over)) {
          await new Promise((resolve) => setTimeout(resolve, pause));
        }
      }
      return results;
    }

    /** Another user's REST reads, one after another, until `done` settles (at least one). */
    async function restReader(done: Promise<unknown>): Promise<Timed[]> {
      let over = false;
      void done.then(() => {
        over = true;
      });
      const results: Timed[] = [];
      const read = restCall(stack.apiUrl, readerToken, 'inspect_entries', { lim: 50 });
      do results.push(await timed(read));
      while (!over);
      return results;
    }

    async function runScenario(pooled: Pooled, admin: string, attack?: FloodOrder) {
      const adminToken = await tokenAt(admin, adminId);
      const attacking = attack
        ? (await flood(attack)).done
        : Promise.resolve({ results: [] as Timed[], s: 0 });
      const agent = adminAgent(admin, adminToken, attacking, attack ? 1 : QUIET_ADMIN_WAVES);
      const [adminResults, restResults, attackResults] = await Promise.all([
        agent,
        restReader(Promise.all([agent, attacking])),
        attacking,
      ]);
      pooled.adminSearches.push(...adminResults.searches);
      pooled.adminOthers.push(...adminResults.others);
      pooled.rest.push(...restResults);
      pooled.attack.push(...attackResults.results);
      if (attack) pooled.seconds.push(attackResults.s);
    }

    const memberBefore = await tokenAt(beforeUrl, memberId);
    const memberAfter = await tokenAt(stack.mcpUrl, memberId);
    const shape = { waves, size: floodSize };
    const scenarios: Array<{ name: string; admin: string; attack?: FloodOrder }> = [
      { name: 'no flood', admin: stack.mcpUrl },
      {
        name: 'member floods tools/call, fair use off (before)',
        admin: beforeUrl,
        attack: { via: 'tools/call', base: beforeUrl, token: memberBefore, ...shape },
      },
      {
        name: 'member floods tools/call, fair use on (after)',
        admin: stack.mcpUrl,
        attack: { via: 'tools/call', base: stack.mcpUrl, token: memberAfter, ...shape },
      },
      {
        name: 'member floods REST rpc/inspect_entries (yardstick)',
        admin: stack.mcpUrl,
        attack: { via: 'rest', base: stack.apiUrl, token: memberAfter, ...shape },
      },
    ];
    // Warm-up, not counted: both servers' pools, plans and caller profiles.
    for (const base of [stack.mcpUrl, beforeUrl]) {
      await adminAgent(base, await tokenAt(base, adminId), Promise.resolve(), QUIET_ADMIN_WAVES);
    }
    const pooled: Pooled[] = scenarios.map(() => ({
      adminSearches: [],
      adminOthers: [],
      rest: [],
      attack: [],
      seconds: [],
    }));
    for (let round = 0; round < rounds; round += 1) {
      for (const [index, entry] of scenarios.entries()) {
        await runScenario(pooled[index] as Pooled, entry.admin, entry.attack);
      }
    }

    console.log(
      `\n${values.entries} entries over ${values.weeks} weeks; flood: ${waves} waves of ` +
        `${floodSize} concurrent searches; admin: a wave of 2 searches and 4 other calls at once ` +
        `each second while the flood lasts; ${rounds} rounds pooled; ${cpus().length} × ${cpus()[0]?.model}, ` +
        `Node ${process.version}\n`,
    );
    console.log(
      '| scenario | admin calls: ok / 429 / failed | admin searches p50 / p95 ms | ' +
        'admin other calls p50 / p95 ms ' +
        '| REST reader p50 / p95 ms (reads, failed) | flood: ok / 429 / failed | flood s (median) |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const [index, entry] of scenarios.entries()) {
      const results = pooled[index] as Pooled;
      const searches = summary(results.adminSearches);
      const others = summary(results.adminOthers);
      const rest = summary(results.rest);
      const attack = summary(results.attack);
      const seconds = [...results.seconds].sort((a, b) => a - b);
      const ms = (value: number) => value.toFixed(0);
      console.log(
        `| ${entry.name} | ${searches.ok + others.ok} / ${searches.refused + others.refused} / ` +
          `${searches.failed + others.failed} | ` +
          `${ms(searches.p50)} / ${ms(searches.p95)} | ${ms(others.p50)} / ${ms(others.p95)} | ` +
          `${ms(rest.p50)} / ${ms(rest.p95)} (${rest.n}, ${rest.failed + rest.refused}) | ` +
          `${attack.n ? `${attack.ok} / ${attack.refused} / ${attack.failed}` : '—'} | ` +
          `${seconds.length ? percentile(seconds, 50).toFixed(1) : '—'} |`,
      );
    }
  } finally {
    await before.stop();
    await db.end();
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (isMainThread) await main();
else parentPort?.postMessage(await floodFrom(workerData as FloodOrder));
