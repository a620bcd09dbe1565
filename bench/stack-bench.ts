// Benchmarks of the local stack: cold start (new data dir, initdb) and warm
// start (existing data dir) in seconds, and gateway overhead as requests/s through the gateway
// over requests/s straight to PostgREST for the same GET, measured in alternating rounds, with the
// CPU time one request costs the gateway's nginx, this process (the gateway's Node router beside
// the stack's other Node services) and PostgREST + Postgres on each side.
// Run: npm run bench:stack -- [--rounds N] [--seconds S] [--connections C]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { REPO_ROOT, startStack } from '../packages/stack/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { cpuMsBetween, descendantCpuMs } from './process-tree-cpu.ts';

const { values } = parseBenchArgs({
  name: 'bench:stack',
  measures: `The local stack on the test fixture project: cold start (new data dir: initdb, bootstrap,
    migrations, seed, services) and warm start (the same data dir again), in seconds; then
    requests/s of one anon GET through the gateway and straight to PostgREST (autocannon in its
    own process, the two sides alternating round by round), with the CPU one request costs the
    gateway's nginx, this process (the gateway's router beside the stack's other Node services)
    and PostgREST + Postgres on each side.`,
  comparedWith: `the same GET straight to PostgREST in the same run: the gateway ratio is
    gateway req/s over direct req/s, paired per round (goal at least 0.9 at 16 connections);
    starts are held to the goal of a warm start under 5 s (docs/local-stack.md, "Benchmark").`,
  flags: {
    rounds: {
      type: 'string',
      value: 'N',
      description:
        'rounds of a cold and a warm start, then of the gateway/direct load pair; figures are medians',
      default: '3',
    },
    seconds: {
      type: 'string',
      value: 'S',
      description: 'seconds of autocannon load on each side (gateway, direct) in each round',
      default: '5',
    },
    connections: {
      type: 'string',
      value: 'C',
      description: 'autocannon connections on each side',
      default: '16',
    },
  },
});
const rounds = Number(values.rounds);
const fixtureProject = join(REPO_ROOT, 'packages', 'stack', 'test', 'fixtures', 'project');
const logger = pino({ level: 'error' });

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function timeStart(dataDir: string): Promise<number> {
  const started = performance.now();
  const stack = await startStack({ projectDir: fixtureProject, dataDir, ports: 'free', logger });
  const seconds = (performance.now() - started) / 1000;
  await stack.stop();
  return seconds;
}

interface Load {
  rps: number;
  /** CPU µs per request of the gateway's nginx (its fast path serves this GET). */
  nginxUs: number;
  /** CPU µs per request of this process: the gateway's router and the stack's other services. */
  nodeUs: number;
  /** CPU µs per request of PostgREST and the Postgres processes together. */
  upstreamUs: number;
}

/** Requests per second from autocannon run as its own process, so it does not share our loop. */
async function measure(url: string, headers: Record<string, string>): Promise<Load> {
  const args = ['-j', '-c', String(values.connections), '-d', String(values.seconds)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  const cpuBefore = descendantCpuMs();
  const nodeBefore = process.cpuUsage();
  const child = spawn(join(REPO_ROOT, 'node_modules', '.bin', 'autocannon'), [...args, url], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  await new Promise((resolve) => child.once('close', resolve));
  const node = process.cpuUsage(nodeBefore);
  const used = cpuMsBetween(cpuBefore, descendantCpuMs());
  const result = JSON.parse(output) as {
    requests: { average: number; total: number };
    non2xx: number;
  };
  if (result.non2xx > 0) throw new Error(`${url} answered ${result.non2xx} non-2xx responses`);
  const upstreamMs = (used.get('postgrest') ?? 0) + (used.get('postgres') ?? 0);
  return {
    rps: result.requests.average,
    nginxUs: ((used.get('nginx') ?? 0) * 1000) / result.requests.total,
    nodeUs: (node.user + node.system) / result.requests.total,
    upstreamUs: (upstreamMs * 1000) / result.requests.total,
  };
}

const cold: number[] = [];
const warm: number[] = [];
for (let round = 0; round < rounds; round += 1) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-stack-'));
  cold.push(await timeStart(dataDir));
  warm.push(await timeStart(dataDir));
  rmSync(dataDir, { recursive: true, force: true });
}

const dataDir = mkdtempSync(join(tmpdir(), 'bench-gateway-'));
const stack = await startStack({
  projectDir: fixtureProject,
  dataDir,
  ports: 'free',
  ephemeral: true,
  logger,
});
const path = '/notes?select=id,body&order=id&limit=1';
const viaGateway: Load[] = [];
const direct: Load[] = [];
const ratios: number[] = [];
try {
  for (let round = 0; round < rounds; round += 1) {
    const gatewayLoad = await measure(`${stack.apiUrl}/rest/v1${path}`, {
      apikey: stack.keys.anonKey,
    });
    const directLoad = await measure(`http://127.0.0.1:${stack.ports.rest}${path}`, {
      Authorization: `Bearer ${stack.keys.anonKey}`,
    });
    viaGateway.push(gatewayLoad);
    direct.push(directLoad);
    ratios.push(gatewayLoad.rps / directLoad.rps);
  }
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

const fmt = (numbers: number[], digits: number) =>
  `median ${median(numbers).toFixed(digits)} (min ${Math.min(...numbers).toFixed(digits)}, max ${Math.max(...numbers).toFixed(digits)})`;
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
console.log(
  `rounds: ${rounds}; load: ${values.connections} connections x ${values.seconds} s per side`,
);
console.log(`cold start (initdb + bootstrap + migrations + seed + services), s: ${fmt(cold, 2)}`);
console.log(`warm start (existing data dir), s: ${fmt(warm, 2)}`);
const of = (loads: Load[], key: keyof Load) => loads.map((load) => load[key]);
console.log(`GET through gateway, req/s: ${fmt(of(viaGateway, 'rps'), 0)}`);
console.log(`GET straight to PostgREST, req/s: ${fmt(of(direct, 'rps'), 0)}`);
console.log(`gateway ratio (gateway / direct, paired per round): ${fmt(ratios, 3)}`);
// The Node process also runs auth, realtime and status; its CPU in the direct rounds is that
// background, so the difference is what the gateway's router costs a request (none on this GET,
// which nginx's fast path serves).
for (const [side, loads] of [
  ['through gateway', viaGateway],
  ['straight to PostgREST', direct],
] as const) {
  console.log(
    `CPU per request, µs, ${side}: nginx ${fmt(of(loads, 'nginxUs'), 0)}; Node process ${fmt(of(loads, 'nodeUs'), 0)}; PostgREST + Postgres ${fmt(of(loads, 'upstreamUs'), 0)}`,
  );
}
