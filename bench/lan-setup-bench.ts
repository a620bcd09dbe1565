// Benchmark of LAN mode's first capture (goal under 60 s on a fresh data dir and under 10 s warm,
// docs/bench-lan.md): `stack up --lan` as its own process, and a phone in a network namespace on a
// simulated LAN that opens the banner's set-up link (the scan) and sends one request through its
// device port (the tap), until that request's row is in public.entries. Fresh runs start from an
// empty data dir, warm runs restart the same one; a warm start without --lan in the same round
// shows what LAN mode adds to a start. Needs root, iproute2 and curl (helpers/lan-namespace.ts).
// Run: npm run bench:lan -- [--runs N] [--timeout-s S]
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createLan, type Lan, type Phone } from '../packages/stack/test/helpers/lan-namespace.ts';
import { parseBenchArgs } from './bench-cli.ts';
import {
  killRunningStacks,
  type StackRun,
  type StartPhases,
  splitStart,
  startStackProcess,
  stopRunningStacks,
} from './stack-cli-process.ts';

const { values, exitWithUsage } = parseBenchArgs({
  name: 'bench:lan',
  measures: `LAN mode's first capture: \`stack up --lan\` as its own process on free ports and a new
    data dir, and a phone in a network namespace on a simulated LAN that opens the banner's set-up
    link (the scan) and sends one request through its device port (the tap), until that request's
    row is in public.entries; the start split into phases, with the CPU of the stack's process
    tree. Each round starts a new data dir (fresh), then restarts it with --lan (warm) and without
    (alternating which goes first). Needs root, iproute2 and curl.`,
  comparedWith: `the goals of docs/bench-lan.md: under 60 s from start to the first capture on a
    fresh data dir and under 10 s warm; and, in the same round, a warm start without --lan, which
    shows what LAN mode adds to a start.`,
  flags: {
    runs: {
      type: 'string',
      value: 'N',
      description: 'rounds of a fresh start and two warm ones (with and without --lan); at least 1',
      default: '3',
    },
    'timeout-s': {
      type: 'string',
      value: 'S',
      description: 'seconds a stack start may take to reach its banner before the run fails',
      default: '300',
    },
  },
});
const runs = Number(values.runs);
const timeoutMs = Number(values['timeout-s']) * 1000;
if (!(Number.isInteger(runs) && runs >= 1) || !(timeoutMs > 0)) {
  exitWithUsage('--runs must be an integer >= 1 and --timeout-s a number > 0');
}
/** How often the bench looks for the tap's row (docs/bench-lan.md). */
const POLL_MS = 50;
const CAPTURE_TIMEOUT_MS = 30_000;
/** The page's manual proxy row (proxy/src/setup/setup-page.ts renderCopyRow). */
const MANUAL_PROXY =
  /Manual proxy, for HTTP and HTTPS:<\/p>\s*<div class="copy"><code>([^<]+)<\/code>/;

interface PhoneRun {
  scanMs: number;
  tapMs: number;
  /** From the tap's answer to its row in public.entries. */
  captureLagMs: number;
  phoneMs: number;
}

interface LanRun extends PhoneRun, StartPhases {
  totalMs: number;
  stopMs: number;
}

const dataDirs = new Set<string>();
let lan: Lan | undefined;
let origin: http.Server | undefined;

async function cleanUp(): Promise<void> {
  await stopRunningStacks();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  dataDirs.clear();
  origin?.close();
  await lan?.destroy();
}

let aborting = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (aborting) return;
    aborting = true;
    console.error(`\n${signal}: stopping the stacks, removing the data dirs and the LAN`);
    cleanUp().finally(() => process.exit(130));
  });
}
process.on('exit', killRunningStacks);

function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-lan-'));
  dataDirs.add(dir);
  return dir;
}

/** Runs curl in the phone; its stdout, or an error naming the step when it fails. */
async function phoneCurl(phone: Phone, step: string, args: string[]): Promise<string> {
  const result = await phone.exec('curl', ['-sS', '--max-time', '10', ...args], {
    timeoutMs: 15_000,
  });
  if (result.code !== 0) throw new Error(`${step}: curl exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

/** Polls public.entries for the row of `path` until it is there; its device's name. */
async function waitForCapture(dbUrl: string, path: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: dbUrl, application_name: 'bench-lan' });
  await client.connect();
  try {
    const deadline = performance.now() + CAPTURE_TIMEOUT_MS;
    while (performance.now() < deadline) {
      const found = await client.query<{ name: string | null }>(
        `select d.name from public.entries e left join public.devices d on d.uuid = e.device_uuid
         where e.path = $1 limit 1`,
        [path],
      );
      if (found.rows[0]) return found.rows[0].name;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw new Error(`no row for ${path} in public.entries within ${CAPTURE_TIMEOUT_MS} ms`);
  } finally {
    await client.end();
  }
}

/** The phone's part: the scan, the tap, and the tap's row, timed from the banner. */
async function runPhone(stack: StackRun, phone: Phone, originUrl: string): Promise<PhoneRun> {
  const setupUrl = stack.variables.PHONE_SETUP_URL;
  const dbUrl = stack.variables.DB_URL;
  if (!setupUrl || !dbUrl) throw new Error('the banner has no PHONE_SETUP_URL or DB_URL');
  const path = `/lan-bench/${randomUUID()}`;
  const started = stack.readyAt;
  const page = await phoneCurl(phone, 'scan', ['--fail', setupUrl]);
  const scanned = performance.now();
  const manualProxy = MANUAL_PROXY.exec(page)?.[1];
  if (!manualProxy) throw new Error('the set-up page shows no manual proxy');
  const capture = waitForCapture(dbUrl, path);
  capture.catch(() => undefined);
  await phoneCurl(phone, 'tap', [
    '--fail',
    '-o',
    '/dev/null',
    '-x',
    `http://${manualProxy}`,
    `${originUrl}${path}`,
  ]);
  const tapped = performance.now();
  const device = await capture;
  const captured = performance.now();
  if (device !== 'Phone (LAN)') throw new Error(`the tap was captured as ${device ?? 'no device'}`);
  return {
    scanMs: scanned - started,
    tapMs: tapped - scanned,
    captureLagMs: captured - tapped,
    phoneMs: captured - started,
  };
}

/** One line per start on stderr, to see an outlier's phases and what the stack warned about. */
function reportStart(label: string, phases: StartPhases, stack: StackRun, phoneMs?: number): void {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  const phone = phoneMs === undefined ? '' : `, phone ${s(phoneMs)} s`;
  const warned = stack.warnings.length > 0 ? `; warnings: ${stack.warnings.join(' | ')}` : '';
  console.error(
    `${label}: ready ${s(phases.readyMs)} s (postgres ${s(phases.postgresMs)}, migrations ` +
      `${s(phases.migrationsMs)}, api ${s(phases.apiMs)}, services ${s(phases.servicesMs)}, ` +
      `banner ${s(phases.bannerMs)}; CPU ${s(phases.readyCpuMs)} s)${phone}${warned}`,
  );
}

async function runLan(
  label: string,
  dataDir: string,
  lanArgs: string[],
  phone: Phone,
  originUrl: string,
): Promise<LanRun> {
  const stack = await startStackProcess([...lanArgs, '--data-dir', dataDir], timeoutMs);
  try {
    const phoneRun = await runPhone(stack, phone, originUrl);
    const stopMs = await stack.stop();
    const phases = splitStart(stack);
    reportStart(label, phases, stack, phoneRun.phoneMs);
    return {
      ...phoneRun,
      ...phases,
      totalMs: stack.readyMs + phoneRun.phoneMs,
      stopMs,
    };
  } finally {
    await stack.stop();
  }
}

async function timeLoopbackStart(
  label: string,
  dataDir: string,
  args: string[],
): Promise<StartPhases> {
  const stack = await startStackProcess([...args, '--data-dir', dataDir], timeoutMs);
  await stack.stop();
  const phases = splitStart(stack);
  reportStart(label, phases, stack);
  return phases;
}

const loadBefore = loadavg();
const fresh: LanRun[] = [];
const warm: LanRun[] = [];
const loopbackWarm: StartPhases[] = [];
const ratios: number[] = [];
const cpuRatios: number[] = [];
let lanArgs: string[] = [];
try {
  lan = await createLan({ phones: 1 });
  const phone = lan.phones[0] as Phone;
  origin = http.createServer((_request, response) => response.end('captured\n'));
  origin.listen(0, lan.hostAddress);
  await once(origin, 'listening');
  const originUrl = `http://${lan.hostAddress}:${(origin.address() as AddressInfo).port}`;
  const common = ['--free-ports', '--log-format', 'json'];
  // Only the bench's own origin: the proxy may reach nothing else on this run.
  lanArgs = [...common, '--lan', lan.hostAddress, '--proxy-destinations', `${lan.hostAddress}/32`];
  for (let round = 1; round <= runs; round += 1) {
    const dataDir = newDataDir();
    fresh.push(await runLan(`round ${round} fresh`, dataDir, lanArgs, phone, originUrl));
    // Alternate which warm start goes first, so neither always follows the other.
    let warmRun: LanRun;
    let loopback: StartPhases;
    if (round % 2 === 1) {
      warmRun = await runLan(`round ${round} warm`, dataDir, lanArgs, phone, originUrl);
      loopback = await timeLoopbackStart(`round ${round} warm without --lan`, dataDir, common);
    } else {
      loopback = await timeLoopbackStart(`round ${round} warm without --lan`, dataDir, common);
      warmRun = await runLan(`round ${round} warm`, dataDir, lanArgs, phone, originUrl);
    }
    warm.push(warmRun);
    loopbackWarm.push(loopback);
    ratios.push(warmRun.readyMs / loopback.readyMs);
    cpuRatios.push(warmRun.readyCpuMs / loopback.readyCpuMs);
    rmSync(dataDir, { recursive: true, force: true });
    dataDirs.delete(dataDir);
  }
} finally {
  await cleanUp();
}
const loadAfter = loadavg();

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const seconds = (ms: number) => (ms / 1000).toFixed(2);
const cell = (numbers: number[]) =>
  `${seconds(Math.min(...numbers))} / ${seconds(median(numbers))} / ${seconds(Math.max(...numbers))}`;
type Figure = { [K in keyof LanRun]: LanRun[K] extends number ? K : never }[keyof LanRun];
const phases: [string, Figure][] = [
  ['t_ready (spawn → banner)', 'readyMs'],
  ['  Node + initdb (fresh) + postgres', 'postgresMs'],
  ['  bootstrap + migrations (+ seed)', 'migrationsMs'],
  ['  functions, PostgREST, auth, realtime, gateway', 'apiMs'],
  ['  proxy, tool server, dashboard, status', 'servicesMs'],
  ['  phone set-up link + banner', 'bannerMs'],
  ['CPU to the banner (stack process tree)', 'readyCpuMs'],
  ['t_phone (banner → row)', 'phoneMs'],
  ['  scan (curl opens the set-up link)', 'scanMs'],
  ['  tap (curl -x via the device port)', 'tapMs'],
  ['  answer → row seen in entries', 'captureLagMs'],
  ['t_total', 'totalMs'],
  ['stop (SIGINT → exit)', 'stopMs'],
];
const loads = (load: number[]) => load.map((value) => value.toFixed(2)).join(' ');
console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ` +
    `load average before ${loads(loadBefore)}, after ${loads(loadAfter)}`,
);
console.log(`command: node ${process.argv.slice(1).join(' ')}  (runs ${runs})`);
console.log(`stack: node packages/stack/bin/stack.mjs up ${lanArgs.join(' ')} --data-dir DIR`);
console.log(
  '\n| phase, s (min / median / max) | fresh | warm | warm without --lan |\n| --- | --- | --- | --- |',
);
for (const [label, key] of phases) {
  const of = (list: LanRun[]) => list.map((run) => run[key]);
  const loopback =
    key in (loopbackWarm[0] as StartPhases)
      ? cell(loopbackWarm.map((run) => run[key as Figure & keyof StartPhases]))
      : '—';
  console.log(`| ${label} | ${cell(of(fresh))} | ${cell(of(warm))} | ${loopback} |`);
}
// Where the CPU to the banner went, by process (median of the runs, 0 where a run had none).
const commands = [...new Set(warm.flatMap((run) => [...run.cpuByCommand.keys()]))];
const cpuOf = (list: StartPhases[], command: string) =>
  seconds(median(list.map((run) => run.cpuByCommand.get(command) ?? 0)));
console.log('\n| CPU to the banner by process, s (median) | fresh | warm | warm without --lan |');
console.log('| --- | --- | --- | --- |');
for (const command of commands.sort(
  (a, b) =>
    median(warm.map((run) => run.cpuByCommand.get(b) ?? 0)) -
    median(warm.map((run) => run.cpuByCommand.get(a) ?? 0)),
)) {
  console.log(
    `| ${command} | ${cpuOf(fresh, command)} | ${cpuOf(warm, command)} | ${cpuOf(loopbackWarm, command)} |`,
  );
}
const spread = (numbers: number[]) =>
  `median ${median(numbers).toFixed(2)} (min ${Math.min(...numbers).toFixed(2)}, ` +
  `max ${Math.max(...numbers).toFixed(2)})`;
console.log(`\nLAN mode's cost on a warm start, with --lan / without, paired per round:`);
console.log(`  t_ready: ${spread(ratios)}`);
console.log(`  CPU to the banner: ${spread(cpuRatios)}`);
const verdict = (list: LanRun[], goalS: number) => {
  const worst = Math.max(...list.map((run) => run.totalMs)) / 1000;
  const middle = median(list.map((run) => run.totalMs)) / 1000;
  return `${middle < goalS ? 'met' : 'missed'} at the median, ${worst < goalS ? 'met' : 'missed'} in the worst run`;
};
console.log(`goal fresh t_total < 60 s: ${verdict(fresh, 60)}`);
console.log(`goal warm t_total < 10 s: ${verdict(warm, 10)}`);
