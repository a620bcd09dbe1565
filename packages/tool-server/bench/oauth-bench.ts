// Benchmark of the tool server's authorization server on one throwaway stack, beside a password
// sign-in on the same stack in the same run: (a) a full headless authorization, registration to
// the first authenticated MCP call; (b) /token exchanging a prepared code; (c) /token with the
// refresh grant; (d) the password sign-in. Sequential round trips over loopback: min, p50, p95,
// max, and p50/p95 as ratios to the sign-in.
// Run: npx node packages/tool-server/bench/oauth-bench.ts [--runs N] [--warmup W]
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startStack } from '@capture/stack';
import pg from 'pg';
import pino from 'pino';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { percentile } from '../../../bench/percentile.ts';

const { values, exitWithUsage } = parseBenchArgs({
  name: 'bench:oauth',
  measures: `The tool server's authorization server on a throwaway stack, sequential round trips
    over loopback: (a) a full headless authorization, registration to the first authenticated MCP
    call; (b) /token exchanging a prepared code; (c) /token with the refresh grant. Min, p50, p95
    and max of each.`,
  comparedWith: `(d) a password sign-in (/auth/v1/token?grant_type=password) on the same stack in
    the same run: every row's p50 and p95 are also given as ratios to it (docs/tool-server.md,
    "Benchmark").`,
  flags: {
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed round trips per row, after the warm-up ones; at least 1',
      default: '200',
    },
    warmup: {
      type: 'string',
      value: 'W',
      description: 'untimed round trips per row before the timed ones; 0 or more',
      default: '10',
    },
  },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(warmup) || warmup < 0) {
  exitWithUsage('--runs must be a positive integer and --warmup a non-negative one');
}

const MEMBER = { email: 'user@demo.local', password: 'demo-user-pass' };
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
/** Codes live 60 s (001 §4.3): (b) prepares and spends them in batches well inside that. */
const CODE_BATCH = 50;

const dataDir = mkdtempSync(join(tmpdir(), 'oauth-bench-'));
const stack = await startStack({
  projectDir: REPO_ROOT,
  dataDir,
  ports: 'free',
  ephemeral: true,
  proxy: false,
  // Every round signs in from 127.0.0.1: per-address auth limits would measure the limiter.
  authRateLimits: 'off',
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });

async function call(
  url: string,
  init: RequestInit,
  expected: number,
): Promise<{ response: Response; text: string }> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  const text = await response.text();
  if (response.status !== expected) {
    throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status}: ${text}`);
  }
  return { response, text };
}

function postForm(url: string, form: Record<string, string>) {
  return call(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    },
    200,
  );
}

function postJson(url: string, body: unknown, headers: Record<string, string>, expected: number) {
  return call(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    },
    expected,
  );
}

async function passwordSignIn(): Promise<string> {
  const { text } = await postJson(
    `${stack.apiUrl}/auth/v1/token?grant_type=password`,
    MEMBER,
    { apikey: stack.keys.publishableKey },
    200,
  );
  return String(JSON.parse(text).access_token);
}

async function register(): Promise<string> {
  const { text } = await postJson(
    `${stack.mcpUrl}/register`,
    {
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      client_name: 'OAuth benchmark',
      // A registration of its own each time: identical loopback ones from one address share a
      // client (docs/tool-server.md, registrations), which would time a lookup, not a sign-up.
      software_id: randomUUID(),
    },
    {},
    201,
  );
  return String(JSON.parse(text).client_id);
}

/** /authorize, then Allow through the consent API as the signed-in member: code and verifier. */
async function approve(clientId: string, session: string) {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${stack.mcpUrl}/authorize`);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('base64url'),
    resource: stack.mcpUrl,
  })) {
    authorize.searchParams.set(name, value);
  }
  const { response } = await call(authorize.toString(), {}, 302);
  const rid = new URL(response.headers.get('location') ?? '').searchParams.get('rid');
  const { text } = await postJson(
    `${stack.mcpUrl}/oauth/authorizations/${rid}/consent`,
    { action: 'approve' },
    { authorization: `Bearer ${session}` },
    200,
  );
  const code = new URL(JSON.parse(text).redirect_url).searchParams.get('code') ?? '';
  return { code, verifier };
}

async function exchange(clientId: string, code: string, verifier: string) {
  const { text } = await postForm(`${stack.mcpUrl}/token`, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
  });
  return JSON.parse(text) as { access_token: string; refresh_token: string };
}

async function initialize(accessToken: string): Promise<void> {
  await postJson(
    `${stack.mcpUrl}/`,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'oauth-bench', version: '1.0.0' },
      },
    },
    { authorization: `Bearer ${accessToken}`, accept: 'application/json, text/event-stream' },
    200,
  );
}

interface Summary {
  runs: number;
  min: number;
  p50: number;
  p95: number;
  max: number;
}

/** Times `runs` sequential calls of `measured` after `warmup` untimed ones; `prepare` is untimed. */
async function measure<Prepared>(
  prepare: (index: number) => Promise<Prepared>,
  measured: (prepared: Prepared) => Promise<void>,
): Promise<Summary> {
  const times: number[] = [];
  for (let index = 0; index < warmup + runs; index += 1) {
    const prepared = await prepare(index);
    const started = performance.now();
    await measured(prepared);
    if (index >= warmup) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return {
    runs: times.length,
    min: times[0] ?? Number.NaN,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    max: times.at(-1) ?? Number.NaN,
  };
}

try {
  await db.connect();
  // The dashboard session the user already has when a client sends them to consent.
  const session = await passwordSignIn();

  // (a) Registration is limited per address (30/h): the counter is cleared, untimed, before each.
  const full = await measure(
    () => db.query('delete from private.oauth_rate_counters'),
    async () => {
      const clientId = await register();
      const { code, verifier } = await approve(clientId, session);
      const { access_token } = await exchange(clientId, code, verifier);
      await initialize(access_token);
    },
  );

  // (b) Codes prepared in batches, each spent within seconds of its approval.
  const codeClient = await register();
  let batch: Array<{ code: string; verifier: string }> = [];
  const codeExchange = await measure(
    async () => {
      if (batch.length === 0) {
        for (let index = 0; index < CODE_BATCH; index += 1) {
          batch.push(await approve(codeClient, session));
        }
      }
      return batch.pop() as { code: string; verifier: string };
    },
    async ({ code, verifier }) => {
      await exchange(codeClient, code, verifier);
    },
  );
  batch = [];

  // (c) One refresh chain: every refresh spends the token the previous one issued.
  const refreshClient = await register();
  const first = await approve(refreshClient, session);
  let refreshToken = (await exchange(refreshClient, first.code, first.verifier)).refresh_token;
  const refresh = await measure(
    async () => refreshToken,
    async (token) => {
      const { text } = await postForm(`${stack.mcpUrl}/token`, {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: refreshClient,
      });
      refreshToken = String(JSON.parse(text).refresh_token);
    },
  );

  // (d) The password sign-in on the same stack, as the yardstick.
  const signIn = await measure(
    async () => undefined,
    async () => {
      await passwordSignIn();
    },
  );

  const round = (value: number) => value.toFixed(1);
  const ratio = (value: number, base: number) => `${(value / base).toFixed(2)}×`;
  const rows: Array<[string, Summary]> = [
    ['(a) full authorization: register → authorize → consent → token → initialize', full],
    ['(b) /token, authorization_code', codeExchange],
    ['(c) /token, refresh_token', refresh],
    ['(d) password sign-in (/auth/v1/token?grant_type=password)', signIn],
  ];
  const cpu = cpus();
  console.log(
    `Machine: ${cpu.length} CPUs, ${cpu[0]?.model ?? 'unknown'}; Node ${process.version}`,
  );
  console.log(`Runs: ${runs} per row after ${warmup} warm-up runs, sequential, loopback\n`);
  console.log(
    '| measurement | runs | min ms | p50 ms | p95 ms | max ms | p50 / sign-in | p95 / sign-in |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, summary] of rows) {
    console.log(
      `| ${name} | ${summary.runs} | ${round(summary.min)} | ${round(summary.p50)} | ` +
        `${round(summary.p95)} | ${round(summary.max)} | ${ratio(summary.p50, signIn.p50)} | ` +
        `${ratio(summary.p95, signIn.p95)} |`,
    );
  }
} finally {
  await db.end().catch(() => undefined);
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
