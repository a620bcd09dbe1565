// Benchmarks of the local stack (issue: local stack): cold start (new data dir, initdb) and warm
// start (existing data dir) in seconds, and gateway overhead as requests/s through the gateway
// over requests/s straight to PostgREST for the same GET, measured in alternating rounds.
// Run: npm run bench:stack -- [--rounds N] [--seconds S] [--connections C]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { REPO_ROOT, startStack } from '../packages/stack/src/index.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
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

/** Requests per second from autocannon run as its own process, so it does not share our loop. */
async function measureRps(url: string, headers: Record<string, string>): Promise<number> {
  const args = ['-j', '-c', String(values.connections), '-d', String(values.seconds)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  const child = spawn(join(REPO_ROOT, 'node_modules', '.bin', 'autocannon'), [...args, url], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  await new Promise((resolve) => child.once('close', resolve));
  const result = JSON.parse(output) as { requests: { average: number }; non2xx: number };
  if (result.non2xx > 0) throw new Error(`${url} answered ${result.non2xx} non-2xx responses`);
  return result.requests.average;
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
const viaGateway: number[] = [];
const direct: number[] = [];
const ratios: number[] = [];
try {
  for (let round = 0; round < rounds; round += 1) {
    const gatewayRps = await measureRps(`${stack.apiUrl}/rest/v1${path}`, {
      apikey: stack.keys.anonKey,
    });
    const directRps = await measureRps(`http://127.0.0.1:${stack.ports.rest}${path}`, {
      Authorization: `Bearer ${stack.keys.anonKey}`,
    });
    viaGateway.push(gatewayRps);
    direct.push(directRps);
    ratios.push(gatewayRps / directRps);
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
console.log(`GET through gateway, req/s: ${fmt(viaGateway, 0)}`);
console.log(`GET straight to PostgREST, req/s: ${fmt(direct, 0)}`);
console.log(`gateway ratio (gateway / direct, paired per round): ${fmt(ratios, 3)}`);
