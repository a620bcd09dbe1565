// Benchmark of the MCP data tools (docs/tool-server.md): tools/call of inspect_requests,
// summarize_device_traffic and get_stats over N entries (default 1M, 26 weeks), p50/p95, beside
// the same query made directly over REST (PostgREST RPC through the gateway) in the same run, so
// the tool server's overhead shows as a ratio; then the same with 50 concurrent clients.
// Goal: p95 under 100 ms at 1M entries for each tool, overhead under 1.3x.
// Run: npm run bench:tools -- [--entries 1000000] [--runs 100] [--concurrency 50]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { GENERATED_CAPTURE_FLAGS, prepareBenchEntries } from '../../../bench/entries-generator.ts';
import { percentile } from '../../../bench/percentile.ts';
import { startStack } from '../../stack/src/index.ts';
import { mintAccessToken } from './bench-tokens.ts';
import { postToolCall, toolCallFailed } from './mcp-post.ts';

const { values } = parseBenchArgs({
  name: 'bench:tools',
  measures: `The MCP data tools at N generated entries: raw tools/call POSTs of inspect_requests,
    summarize_device_traffic and get_stats (p50/p95), as an admin and a scoped user, first
    sequential calls, then many concurrent clients (p50/p95 and calls per second); a call whose
    result is a JSON-RPC or tool error counts as failed.`,
  comparedWith: `the same query over REST (PostgREST RPC through the gateway, same token) in the
    same run, so the tool server's overhead shows as a ratio. Goals: p95 under 100 ms at 1M
    entries for each tool, overhead under 1.3x (docs/tool-server.md, "Benchmark: npm run
    bench:tools").`,
  flags: {
    ...GENERATED_CAPTURE_FLAGS,
    runs: {
      type: 'string',
      value: 'N',
      description: `sequential calls per row on each path, after 5 warm-ups; each concurrent client
        then makes a fifth as many, at least 4`,
      default: '100',
    },
    concurrency: {
      type: 'string',
      value: 'C',
      description: 'concurrent clients in the second part, on each path',
      default: '50',
    },
  },
});
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);

type Call = () => Promise<Response>;

/** One call, its body read and checked: a failed call is counted, never timed as a success. */
async function timed(call: Call): Promise<{ ms: number; ok: boolean; detail: string }> {
  const started = performance.now();
  const response = await call();
  const body = await response.text();
  const ms = performance.now() - started;
  const ok = response.ok && !toolCallFailed(body);
  return { ms, ok, detail: ok ? '' : `${response.status} ${body.slice(0, 160)}` };
}

async function sequential(call: Call) {
  for (let warm = 0; warm < 5; warm += 1) await timed(call);
  const times: number[] = [];
  let failures = 0;
  let detail = '';
  for (let run = 0; run < runs; run += 1) {
    const result = await timed(call);
    times.push(result.ms);
    if (!result.ok) {
      failures += 1;
      detail = result.detail;
    }
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95), failures, detail };
}

/** `concurrency` clients each making `runs / 5` calls back to back. */
async function concurrent(call: Call) {
  const times: number[] = [];
  let failures = 0;
  let detail = '';
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let run = 0; run < Math.max(4, Math.floor(runs / 5)); run += 1) {
        const result = await timed(call);
        times.push(result.ms);
        if (!result.ok) {
          failures += 1;
          detail = result.detail;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    failures,
    detail,
    perSecond: times.length / seconds,
  };
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-tools-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  seed: false,
  proxy: false,
  logger: pino({ level: 'error' }),
  // 50 clients on one token measure throughput, not fair use (bench:fair-use does): the limits
  // are lifted out of the way, and the fair queue stays in the path.
  toolServerSettings: {
    toolCalls: {
      perTokenConcurrency: 1_000,
      perUserConcurrency: 1_000,
      perUserRate: 10_000,
      perUserBurst: 100_000,
    },
  },
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
try {
  const total = Number(values.entries);
  const { data, adminId } = await prepareBenchEntries(db, {
    entries: total,
    weeks: Number(values.weeks),
  });
  await db.query('select private.refresh_service_stats()');

  const tokenFor = (sub: string) => mintAccessToken(db, stack, sub);
  const actors = [
    { name: 'admin', id: adminId, token: await tokenFor(adminId) },
    {
      name: 'scoped user',
      id: data.userIds[0] as string,
      token: await tokenFor(data.userIds[0] as string),
    },
  ];

  const lines: string[] = [];
  for (const actor of actors) {
    const { rows } = await db.query<{ uuid: string }>(
      'select uuid from public.devices where owner_user_id = $1 order by uuid limit 1',
      [actor.id],
    );
    const device = rows[0]?.uuid as string;
    const tool =
      (name: string, args: object): Call =>
      () =>
        postToolCall(`${stack.mcpUrl}/`, actor.token, name, args);
    const rest =
      (name: string, args: object): Call =>
      () =>
        fetch(`${stack.apiUrl}/rest/v1/rpc/${name}`, {
          method: 'POST',
          headers: {
            apikey: actor.token,
            authorization: `Bearer ${actor.token}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify(args),
        });
    const cases: Array<{ name: string; tool: Call; rest: Call }> = [
      {
        name: 'inspect_requests, newest 50',
        tool: tool('inspect_requests', { limit: 50 }),
        rest: rest('inspect_entries', { lim: 50 }),
      },
      {
        name: 'inspect_requests, search "checkout"',
        tool: tool('inspect_requests', { search: 'checkout', limit: 50 }),
        rest: rest('inspect_entries', { search_q: 'checkout', lim: 50 }),
      },
      {
        name: 'summarize_device_traffic, 24 h',
        tool: tool('summarize_device_traffic', { device_uuid: device }),
        rest: rest('summarize_device_traffic', { target_uuid: device }),
      },
      {
        name: 'summarize_device_traffic, 7 d',
        tool: tool('summarize_device_traffic', {
          device_uuid: device,
          since: new Date(Date.now() - 7 * 86_400_000).toISOString(),
        }),
        rest: rest('summarize_device_traffic', {
          target_uuid: device,
          from_ts: new Date(Date.now() - 7 * 86_400_000).toISOString(),
        }),
      },
      ...(actor.name === 'admin'
        ? [{ name: 'get_stats', tool: tool('get_stats', {}), rest: rest('get_stats', {}) }]
        : []),
    ];
    for (const entry of cases) {
      const [viaTool, viaRest] = [await sequential(entry.tool), await sequential(entry.rest)];
      const [toolLoad, restLoad] = [await concurrent(entry.tool), await concurrent(entry.rest)];
      const fail = viaTool.failures + viaRest.failures + toolLoad.failures + restLoad.failures;
      lines.push(
        `| ${actor.name} | ${entry.name} | ${viaTool.p50.toFixed(1)} / ${viaTool.p95.toFixed(1)} | ` +
          `${viaRest.p50.toFixed(1)} / ${viaRest.p95.toFixed(1)} | ` +
          `${(viaTool.p50 / viaRest.p50).toFixed(2)}x / ${(viaTool.p95 / viaRest.p95).toFixed(2)}x | ` +
          `${toolLoad.p50.toFixed(1)} / ${toolLoad.p95.toFixed(1)} (${toolLoad.perSecond.toFixed(0)}/s) | ` +
          `${restLoad.p50.toFixed(1)} / ${restLoad.p95.toFixed(1)} (${restLoad.perSecond.toFixed(0)}/s) | ${fail}` +
          `${fail ? ` (${viaTool.detail || viaRest.detail || toolLoad.detail || restLoad.detail})` : ''} |`,
      );
    }
  }
  console.log(
    `\n${total} entries over ${values.weeks} weeks; ${runs} sequential runs per row, then ${concurrency} ` +
      `concurrent clients; ${cpus().length} × ${cpus()[0]?.model}, Node ${process.version}\n`,
  );
  console.log(
    '| caller | call | tools/call p50 / p95 ms | REST p50 / p95 ms | tool ÷ REST p50 / p95 | ' +
      `${concurrency} clients: tool p50 / p95 ms | ${concurrency} clients: REST p50 / p95 ms | failures |`,
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const line of lines) console.log(line);
} finally {
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
