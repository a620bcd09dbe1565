// Benchmark of the federation hand-off (000 §4.1 + §4.3) beside a plain password sign-in on the
// same throwaway stack, in one run: round-trip latency p50/p95 (sequential) and sustained
// hand-offs per second (concurrent workers). Goal: hand-off p95 under 100 ms locally.
// Run: npm run bench:federation -- [--requests N] [--seconds S] [--workers W]
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@supabase/supabase-js';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { percentile } from './percentile.ts';

const { values } = parseBenchArgs({
  name: 'bench:federation',
  measures: `The federation hand-off (hmac /start + /exchange of an already-bound partner user,
    through the gateway) on a throwaway stack: round-trip latency p50/p95 of sequential hand-offs,
    then hand-offs per second from concurrent workers, each a different partner user.`,
  comparedWith: `a plain password sign-in (POST /auth/v1/token?grant_type=password) on the same
    stack in the same run, measured the same two ways; the JSON gives both and their ratios. Goal:
    hand-off p95 under 100 ms locally (docs/federation.md, "Benchmark").`,
  flags: {
    requests: {
      type: 'string',
      value: 'N',
      description: 'sequential round trips timed on each side, after 10 warm-ups',
      default: '200',
    },
    seconds: {
      type: 'string',
      value: 'S',
      description:
        'seconds of concurrent load on each side for the per-second figures; 0 measures latency only',
      default: '10',
    },
    workers: {
      type: 'string',
      value: 'W',
      description: 'concurrent workers during the per-second figures',
      default: '8',
    },
  },
});
const requests = Number(values.requests);
const seconds = Number(values.seconds);
const workers = Number(values.workers);

const dataDir = mkdtempSync(join(tmpdir(), 'federation-bench-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  // Every round signs in from 127.0.0.1: per-address auth limits would measure the limiter.
  authRateLimits: 'off',
  logger: pino({ level: 'error' }),
});

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

try {
  const service = createClient(stack.apiUrl, stack.keys.serviceRoleKey, {
    auth: { persistSession: false },
  });
  const { data: client, error } = await service.rpc('upsert_federation_client', {
    client_id: 'svc_bench',
    client_name: 'Benchmark partner',
    verify_mode: 'hmac',
    capped_role: 'member',
    mint_hmac_secret: true,
    start_limit_per_minute: 1_000_000,
    exchange_limit_per_minute: 1_000_000,
    ip_limit_per_minute: 1_000_000,
    confirm: true,
  });
  if (error) throw error;
  const secret = String(client.hmac_secret);
  const broker = `${stack.apiUrl}/functions/v1/federation-broker`;

  /**
   * One hand-off of partner user `user` (after the first, the steady state: an identity already
   * mapped). Concurrent workers hand off different users, as real traffic does.
   */
  async function handOff(user = 0): Promise<void> {
    const verifier = randomBytes(32).toString('base64url');
    const payload = {
      email: `bench-user-${user}@example.com`,
      iat: Math.floor(Date.now() / 1000),
      jti: randomBytes(12).toString('base64url'),
      sub: `bench-user-${user}`,
    };
    const start = await post(`${broker}/start`, {
      client_id: 'svc_bench',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      payload,
      signature: createHmac('sha256', secret).update(JSON.stringify(payload)).digest('base64url'),
    });
    const code = new URL(String(start.link)).searchParams.get('code');
    await post(`${broker}/exchange`, { code, code_verifier: verifier });
  }

  await service.auth.admin.createUser({
    email: 'bench-password@example.com',
    password: 'bench-password-1',
    email_confirm: true,
  });
  const auth = `${stack.apiUrl}/auth/v1/token?grant_type=password`;
  async function passwordSignIn(): Promise<void> {
    await post(
      auth,
      { email: 'bench-password@example.com', password: 'bench-password-1' },
      { apikey: stack.keys.anonKey },
    );
  }

  async function latencies(run: () => Promise<void>): Promise<{ p50: number; p95: number }> {
    for (let warm = 0; warm < 10; warm += 1) await run();
    const times: number[] = [];
    for (let index = 0; index < requests; index += 1) {
      const started = performance.now();
      await run();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p95: percentile(times, 95) };
  }

  async function throughput(run: (worker: number) => Promise<void>): Promise<number> {
    const deadline = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: workers }, async (_, worker) => {
        while (performance.now() < deadline) {
          await run(worker);
          done += 1;
        }
      }),
    );
    return done / seconds;
  }

  const handoffLatency = await latencies(() => handOff());
  const passwordLatency = await latencies(passwordSignIn);
  const handoffRate = await throughput(handOff);
  const passwordRate = await throughput(passwordSignIn);
  const round = (value: number) => Math.round(value * 10) / 10;
  const result = {
    machine: { nproc: cpus().length, cpu: cpus()[0]?.model ?? 'unknown' },
    settings: { requests, seconds, workers },
    handoff: {
      p50_ms: round(handoffLatency.p50),
      p95_ms: round(handoffLatency.p95),
      per_second: round(handoffRate),
    },
    password_sign_in: {
      p50_ms: round(passwordLatency.p50),
      p95_ms: round(passwordLatency.p95),
      per_second: round(passwordRate),
    },
    ratios: {
      p50: round(handoffLatency.p50 / passwordLatency.p50),
      p95: round(handoffLatency.p95 / passwordLatency.p95),
      throughput: round(handoffRate / passwordRate),
    },
    goal_p95_under_100_ms: handoffLatency.p95 < 100,
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
