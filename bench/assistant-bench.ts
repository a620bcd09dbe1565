// Benchmark of the assistant (POST /functions/v1/ask) against a Responses API double on loopback,
// in one run: time to first byte and to done, the same double called directly beside it, the
// latency each tool step adds (0, 1 and 3 steps, each a list_devices read as the caller), and
// the ask function's memory with 50 streams held open at once.
// Run: node bench/assistant-bench.ts [--runs 30] [--streams 50]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startStack } from '../packages/stack/src/index.ts';
import { ResponsesStub, textTurn, toolTurn } from '../supabase/e2e/ask/helpers/responses-stub.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { percentile } from './percentile.ts';

const { values } = parseBenchArgs({
  name: 'bench:assistant',
  measures: `The assistant (POST /functions/v1/ask) on a throwaway stack, against a Responses API
    double on loopback, as a member with Accept: text/event-stream: time to first byte and to done
    with 0, 1 and 3 tool steps (each step a list_devices read as the caller through PostgREST),
    interleaved round by round after 10 warm-ups; then the ask function's memory (RSS from /proc)
    with many streams held open at once.`,
  comparedWith: `the same double called directly in the same rounds (no ask function between):
    the JSON gives what ask adds to the first byte and to done, and per tool step; the memory
    figure is set against the function's idle RSS (docs/assistant.md, "Benchmark").`,
  flags: {
    runs: {
      type: 'string',
      value: 'N',
      description: 'timed rounds (direct, then ask with 0, 1 and 3 tool steps), after 10 warm-ups',
      default: '30',
    },
    streams: {
      type: 'string',
      value: 'N',
      description: 'ask streams held open at once for the memory figure',
      default: '50',
    },
    'project-dir': {
      type: 'string',
      value: 'DIR',
      description: `the Supabase project to start the stack from (another tree, for a before/after);
        the tool server is then left out`,
      unset: 'this repository',
    },
  },
});
const runs = Number(values.runs);
const streams = Number(values.streams);

interface Sample {
  ttfb: number;
  total: number;
}

function summary(samples: Sample[]) {
  const ttfb = samples.map((s) => s.ttfb).sort((a, b) => a - b);
  const total = samples.map((s) => s.total).sort((a, b) => a - b);
  return {
    ttfb_p50: percentile(ttfb, 50),
    ttfb_p95: percentile(ttfb, 95),
    total_p50: percentile(total, 50),
    total_p95: percentile(total, 95),
  };
}

/** Time to the first body byte and to the end of the body. */
async function timed(request: () => Promise<Response>): Promise<Sample> {
  const started = performance.now();
  const response = await request();
  const reader = response.body?.getReader();
  let ttfb = Number.NaN;
  for (;;) {
    const { done } = (await reader?.read()) ?? { done: true };
    if (Number.isNaN(ttfb)) ttfb = performance.now() - started;
    if (done) break;
  }
  if (response.status !== 200) throw new Error(`status ${response.status}`);
  return { ttfb, total: performance.now() - started };
}

/** The ask function's process: the Deno process whose environment names this stub. */
function askProcessRss(stubUrl: string): number {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (environ.includes(`OPENAI_BASE_URL=${stubUrl}/v1`) && cmdline.includes('ask')) {
        const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
        return Number(rss?.[1] ?? Number.NaN) * 1024;
      }
    } catch {
      // A process that ended or is not ours.
    }
  }
  throw new Error('the ask function process was not found');
}

const stub = await new ResponsesStub().start();
const dataDir = mkdtempSync(join(tmpdir(), 'assistant-bench-'));
const stack = await startStack({
  ...(values['project-dir'] ? { projectDir: values['project-dir'], toolServer: false } : {}),
  dataDir,
  ports: 'free',
  ephemeral: true,
  proxy: false,
  logger: pino({ level: process.env.BENCH_LOG ?? 'warn' }),
  functionSecrets: {
    OPENAI_API_KEY: 'bench-key',
    OPENAI_BASE_URL: `${stub.url}/v1`,
    ASSISTANT_WEB_SEARCH: '0',
    ASSISTANT_RATE_PER_MINUTE: '10000',
    ASSISTANT_MODEL_RETRIES: '0',
  },
});
try {
  const signIn = await fetch(`${stack.apiUrl}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: stack.keys.publishableKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'user@demo.local', password: 'demo-user-pass' }),
  });
  const { access_token: token } = (await signIn.json()) as { access_token: string };
  const askUrl = `${stack.apiUrl}/functions/v1/ask`;
  const answer = 'The Pixel 8 is online and its last 24 h look healthy.\n';
  const ask = () =>
    fetch(askUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ question: 'How is my Pixel?' }),
    });
  const direct = () =>
    fetch(`${stub.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'How is my Pixel?', stream: true }),
    });
  const withSteps = (steps: number) => () => {
    for (let step = 0; step < steps; step += 1) {
      stub.enqueue(() => ({ events: toolTurn([{ name: 'list_devices', arguments: {} }]) }));
    }
    stub.enqueue(() => ({ events: textTurn(answer) }));
    return ask();
  };

  // Warm-up (JIT, connection pools, Deno's first npm: loads), then the cases interleaved run by
  // run so drift on a shared machine hits them alike.
  const directOnce = () => {
    stub.enqueue(() => ({ events: textTurn(answer) }));
    return timed(direct);
  };
  for (let warm = 0; warm < 10; warm += 1) {
    await directOnce();
    await timed(withSteps(1));
  }
  const directSamples: Sample[] = [];
  const stepSamples = new Map<number, Sample[]>([
    [0, []],
    [1, []],
    [3, []],
  ]);
  for (let run = 0; run < runs; run += 1) {
    directSamples.push(await directOnce());
    for (const [steps, samples] of stepSamples) samples.push(await timed(withSteps(steps)));
  }

  // 50 streams at once, each held open by a model answer that takes a while.
  const baseline = askProcessRss(stub.url);
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  for (let index = 0; index < streams; index += 1) {
    stub.enqueue(async () => {
      await held;
      return { events: textTurn(answer) };
    });
  }
  const open = await Promise.all(Array.from({ length: streams }, () => ask()));
  const readers = open.map((response) => response.body?.getReader());
  await Promise.all(readers.map((reader) => reader?.read()));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const loaded = askProcessRss(stub.url);
  release();
  await Promise.all(
    readers.map(async (reader) => {
      for (;;) if ((await reader?.read())?.done ?? true) break;
    }),
  );

  const zero = summary(stepSamples.get(0) ?? []);
  const one = summary(stepSamples.get(1) ?? []);
  const three = summary(stepSamples.get(3) ?? []);
  const directSummary = summary(directSamples);
  const round = (value: number) => Math.round(value * 10) / 10;
  console.log(
    JSON.stringify(
      {
        machine: { cpus: cpus().length, model: cpus()[0]?.model },
        runs,
        direct_to_double_ms: directSummary,
        ask_0_tool_steps_ms: zero,
        ask_1_tool_step_ms: one,
        ask_3_tool_steps_ms: three,
        ask_ttfb_over_direct_p50_ms: round(zero.ttfb_p50 - directSummary.ttfb_p50),
        ask_total_over_direct_p50_ms: round(zero.total_p50 - directSummary.total_p50),
        added_per_tool_step_p50_ms: round((three.total_p50 - zero.total_p50) / 3),
        streams_open: streams,
        ask_rss_idle_mb: round(baseline / 1048576),
        ask_rss_with_streams_mb: round(loaded / 1048576),
        rss_per_stream_kb: round((loaded - baseline) / streams / 1024),
      },
      null,
      2,
    ),
  );
} finally {
  await stack.stop();
  await stub.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
