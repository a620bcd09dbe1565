// Benchmark of the farm tools: the round trip of a trivial farm_run_shell through MCP
// (sandbox start included), beside the same sandbox started directly and a bare bwrap with the
// same namespaces, in one run, so the layers show as ratios: bare bwrap → our sandbox (prlimit,
// generated /etc, tmpfs mounts, uid switch) → one MCP call (bearer auth, audit rows, an approved
// pending action redeemed) → the whole round: the agent asks, a person approves over REST from a
// dashboard session (its machine cost only), the agent calls again.
// Run: npm run bench:farm -- [--runs 30]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { percentile } from '../../../bench/percentile.ts';
import { startStack } from '../../stack/src/index.ts';
import { mintAccessToken } from '../../tool-server/bench/bench-tokens.ts';
import { postToolCall, toolCallMessageOf } from '../../tool-server/bench/mcp-post.ts';
import { FarmConfigSchema } from '../src/farm-config.ts';
import { ShellSandbox } from '../src/shell/shell-sandbox.ts';

const { values } = parseBenchArgs({
  name: 'bench:farm',
  measures: `The farm tools' layers, each timed on a trivial command (true) in one run: our sandbox
    started directly (prlimit, generated /etc, tmpfs mounts, uid switch); one approved
    farm_run_shell over MCP (bearer auth, audit rows, the pending action redeemed); and the whole
    round: the agent asks, a person approves over REST from a dashboard session (its machine cost
    only), the agent calls again. p50/p95 of each.`,
  comparedWith: `a bare bwrap with the same namespaces and a minimal root, in the same run: the
    floor; every layer's p50 is given as a ratio to it (docs/farm.md, "Shell benchmark").`,
  flags: {
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed calls of each layer, after 3 warm-ups',
      default: '30',
    },
  },
});
const runs = Number(values.runs);

async function measure(name: string, action: () => Promise<void>) {
  for (let warm = 0; warm < 3; warm += 1) await action();
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    await action();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { name, p50: percentile(times, 50), p95: percentile(times, 95) };
}

/** bwrap with the sandbox's namespaces and a minimal root, nothing else: the floor. */
function bareBwrap(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      '/usr/bin/bwrap',
      [
        '--unshare-all',
        '--die-with-parent',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/bin',
        '/bin',
        '--symlink',
        'usr/lib',
        '/lib',
        '--symlink',
        'usr/lib64',
        '/lib64',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--',
        '/bin/true',
      ],
      { stdio: 'ignore' },
    );
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap ${code}`))));
  });
}

/** One tools/call of farm_run_shell; fails unless the tool answered. */
async function toolCall(url: string, token: string, args: Record<string, unknown>) {
  const text = await (await postToolCall(url, token, 'farm_run_shell', args)).text();
  const { result } = toolCallMessageOf(text);
  if (!result || result.isError) throw new Error(`farm_run_shell failed: ${text}`);
  return result.structuredContent ?? {};
}

/** The person's dashboard session (the demo admin's password sign-in). */
async function signIn(apiUrl: string, publishableKey: string): Promise<string> {
  const response = await fetch(`${apiUrl}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: publishableKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@demo.local', password: 'demo-admin-pass' }),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`sign-in failed: ${response.status}`);
  return body.access_token;
}

/** The person's approval, as the dashboard's Approvals page sends it. */
async function approve(apiUrl: string, session: string, id: string): Promise<void> {
  const response = await fetch(`${apiUrl}/rest/v1/farm_pending_actions?id=eq.${id}`, {
    method: 'PATCH',
    headers: {
      apikey: session,
      authorization: `Bearer ${session}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ decision: 'approved' }),
  });
  if (response.status !== 204) throw new Error(`approval failed: ${await response.text()}`);
}

const dataDir = mkdtempSync(join(tmpdir(), 'farm-bench-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  proxy: true,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
const sandbox = new ShellSandbox(
  FarmConfigSchema.parse({ enabled: true }),
  pino({ level: 'silent' }),
);
try {
  const { rows } = await db.query<{ id: string }>(
    `select id from auth.users where email = 'admin@demo.local'`,
  );
  const token = await mintAccessToken(db, stack, rows[0]?.id as string);
  const session = await signIn(stack.apiUrl, stack.keys.publishableKey);
  const url = `${stack.mcpUrl}/`;
  const args = { command: 'true' };
  /** The agent asks; the person approves; answers the pending action's id. */
  const askApproved = async () => {
    const id = String((await toolCall(url, token, args)).pending_action_id);
    await approve(stack.apiUrl, session, id);
    return id;
  };
  const results = [
    await measure('bare bwrap (same namespaces), /bin/true', bareBwrap),
    await measure('our sandbox, direct (no MCP), `true`', async () => {
      const result = await sandbox.run({ command: 'true', network: 'none', wallTimeMs: 10_000 });
      if (result.exitCode !== 0) throw new Error(`sandbox exit ${result.exitCode}`);
    }),
  ];
  // The approved call alone: asked and approved outside the timing.
  const approved: string[] = [];
  const approvedOnly = await (async () => {
    for (let i = 0; i < runs + 3; i += 1) approved.push(await askApproved());
    return measure('farm_run_shell over MCP, approved call', async () => {
      await toolCall(url, token, { ...args, pending_action_id: approved.shift() });
    });
  })();
  results.push(approvedOnly);
  results.push(
    await measure('farm_run_shell over MCP, ask + approval over REST + approved call', async () => {
      await toolCall(url, token, { ...args, pending_action_id: await askApproved() });
    }),
  );
  const floor = results[0]?.p50 ?? NaN;
  console.log(`farm bench: ${runs} runs each, ${cpus().length} CPUs (${cpus()[0]?.model})`);
  console.log('| what | p50 ms | p95 ms | p50 / bare bwrap |');
  console.log('|---|---|---|---|');
  for (const result of results) {
    console.log(
      `| ${result.name} | ${result.p50.toFixed(1)} | ${result.p95.toFixed(1)} | ${(result.p50 / floor).toFixed(2)}x |`,
    );
  }
} finally {
  await sandbox.close();
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
