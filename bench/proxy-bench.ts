// Capture proxy benchmark: our proxy beside mitmdump (Debian's mitmproxy,
// capturing to a file) and a direct connection, in one run, on the same loopback origin. Origin,
// each proxy and the client (this process, undici) are separate processes. Ours runs twice: as
// one process, and with --workers worker processes (docs/proxy.md "Worker processes").
//   - requests/s and added p50/p99 for plain HTTP keep-alive and intercepted HTTPS keep-alive,
//     at light load (1 connection) and at 16 connections;
//   - a new HTTPS connection (CONNECT + TLS) per request;
//   - the first-hit cost of a new host's certificate (new SNI name vs a known one);
//   - captures written per second, and captures lost under an open loop at --rate for --sustain s
//     (through the workers: each capture must land exactly once whichever worker served it);
//   - HTTP/2 end to end and gRPC unary calls, direct and through ours with HTTP/2 on;
//   - breakpoints: --held exchanges held at once, each released by a REST PATCH, the
//     resume-to-release latency p50/p95 (run last: the device it allocates takes this host's
//     shared-port traffic; the throughput rows run with no pattern set, as in production).
//   - with --profile DIR: our (HTTP/1) proxy runs under `node --cpu-prof`; its profile, a flame
//     graph (DIR/ours.svg) and the self time by area are written at the end. Profiling slows
//     the proxy: take the ratios from a run without it.
// Run: npm run bench:proxy -- [--seconds 5] [--sequential 200] [--rate 2000] [--sustain 60] [--held 100] [--workers N] [--profile DIR]
import { type ChildProcess, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import {
  findFreePort,
  findFreePortRange,
  isPortOpen,
  waitUntil,
} from '../packages/stack/src/ports.ts';
import { startCluster } from '../packages/stack/src/postgres/cluster.ts';
import {
  applyMigrations,
  applyPlatformBootstrap,
} from '../packages/stack/src/postgres/schema-setup.ts';
import { REPO_ROOT } from '../packages/stack/src/stack.ts';
import { LeafCertificateCache, loadOrCreateCertificateAuthority } from '../proxy/src/index.ts';
import { parseBenchArgs } from './bench-cli.ts';
import { processTreeCpuMs } from './process-tree-cpu.ts';
import { type CpuProfile, renderFlameGraph, summarizeSelfTime } from './proxy/flame-graph.ts';
import { grpcClosedLoop } from './proxy/grpc-load.ts';
import {
  closedLoop,
  type LoadResult,
  newConnectionEach,
  openLoop,
  type Route,
} from './proxy/load.ts';
import { measureResumeLatency } from './proxy/resume-latency.ts';

const { values } = parseBenchArgs({
  name: 'bench:proxy',
  measures: `The capture proxy (capturing to Postgres) on a loopback origin, each party its own
    process: requests/s and added p50/p99 for plain HTTP and intercepted HTTPS keep-alive at 1 and
    16 connections; a new HTTPS connection (CONNECT + TLS) per request; the first-hit cost of a
    new host's certificate; captures written per second and lost under an open loop; HTTP/2 end to
    end and gRPC unary calls with HTTP/2 on; and the resume-to-release latency of exchanges held
    at a breakpoint and released by REST PATCH.`,
  comparedWith: `a direct connection to the same origin and mitmdump (Debian's mitmproxy, writing
    flows to a file), measured the same way in the same run (mitmdump's rows are skipped when it
    is not on PATH). Goals in docs/proxy.md, "Measured": 5x mitmdump's req/s at 16 connections,
    under 1 ms added p50 at one, no capture lost, a held exchange released within 100 ms.`,
  flags: {
    seconds: {
      type: 'string',
      value: 'S',
      description:
        'seconds of each closed-loop load (HTTP, HTTPS, HTTP/2, gRPC), for each contender',
      default: '5',
    },
    sequential: {
      type: 'string',
      value: 'N',
      description: 'HTTPS requests made each on a new connection, for each contender',
      default: '200',
    },
    'first-hits': {
      type: 'string',
      value: 'N',
      description: 'first requests timed for a new host name and for a known one, for each proxy',
      default: '50',
    },
    rate: {
      type: 'string',
      value: 'R',
      description: 'requests per second of the open loop through ours that counts lost captures',
      default: '2000',
    },
    sustain: {
      type: 'string',
      value: 'S',
      description: 'seconds the open loop runs',
      default: '60',
    },
    held: {
      type: 'string',
      value: 'N',
      description: 'exchanges held at a breakpoint at once, each released by a REST PATCH',
      default: '100',
    },
    workers: {
      type: 'string',
      value: 'N',
      description: `worker processes of the second "ours" (the first runs one process; default one
        per core, at least 2); the sustained open loop and the breakpoint resumes run through it`,
      default: String(Math.max(2, availableParallelism())),
    },
    profile: {
      type: 'string',
      value: 'DIR',
      description: `run our HTTP/1 proxy under node --cpu-prof and write its profile, a flame graph
        (DIR/ours.svg) and the self time by area into DIR; it slows the proxy, so take the ratios
        from a run without it`,
      unset: 'no profile',
    },
  },
});
const profileDir = values.profile ? resolve(values.profile) : undefined;
const seconds = Number(values.seconds);
const logger = pino({ level: 'error' });
const node = join(REPO_ROOT, 'node_modules', '.bin', 'node');
const work = mkdtempSync(join(tmpdir(), 'bench-proxy-'));
const children: ChildProcess[] = [];

function start(command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return child;
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline >= 0) resolve(buffer.slice(0, newline));
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before it was ready`)));
  });
}

// Its own temp dir: the cluster's folder is handed to the postgres user.
const dbDir = mkdtempSync(join(tmpdir(), 'bench-proxy-db-'));
const cluster = await startCluster({
  dataDir: dbDir,
  port: await findFreePort(),
  logger,
  ephemeral: true,
});
try {
  await applyPlatformBootstrap(cluster.url);
  await applyMigrations(REPO_ROOT, cluster.url, logger);

  const origin = start(node, [
    join(REPO_ROOT, 'bench', 'proxy', 'origin.ts'),
    join(work, 'origin-ca'),
  ]);
  const ports = JSON.parse(await firstLine(origin)) as {
    http: number;
    https: number;
    h2: number;
    grpc: number;
  };
  const originCaFile = join(work, 'origin-ca', 'ca.pem');

  // Ours twice: one process (PROXY_WORKERS=1) and one worker per core (the default), same CA.
  const startOurs = async (name: string, workers: number, args: string[] = []) => {
    const port = await findFreePort();
    const management = await findFreePort();
    const devicePorts = await findFreePortRange(4);
    const dataDir = join(work, name);
    if (name !== 'ours') {
      mkdirSync(dataDir, { recursive: true });
      for (const file of ['ca.pem', 'ca.key']) {
        copyFileSync(join(work, 'ours', file), join(dataDir, file));
      }
    }
    const child = start(node, [...args, join(REPO_ROOT, 'proxy', 'src', 'cli.ts')], {
      PROXY_DB_URL: cluster.url,
      PROXY_DATA_DIR: dataDir,
      PROXY_PORT: String(port),
      PROXY_MANAGEMENT_PORT: String(management),
      PROXY_DEVICE_PORTS: `${devicePorts.start}-${devicePorts.end}`,
      PROXY_UPSTREAM_CA_FILE: originCaFile,
      PROXY_DESTINATIONS: '127.0.0.0/8,localhost',
      PROXY_HTTP2: 'off',
      PROXY_WORKERS: String(workers),
      LOG_LEVEL: 'warn',
    });
    await waitUntil(`${name} proxy`, () => isPortOpen(port), 30_000);
    return { port, management, pid: child.pid as number };
  };
  const profileArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const ours = await startOurs('ours', 1, profileArgs);
  const ourPort = ours.port;
  const workers = Number(values.workers);
  const oursWorkers = await startOurs('ours-workers', workers);
  const oursWorkersName = `ours ×${workers}`;
  const ourCa = readFileSync(join(work, 'ours', 'ca.pem'), 'utf8');
  // The HTTP/2 rows: the same daemon with HTTP/2 on (its default), sharing the CA.
  const oursH2Port = await findFreePort();
  const oursH2Management = await findFreePort();
  const h2DevicePorts = await findFreePortRange(4);
  mkdirSync(join(work, 'ours-h2'), { recursive: true });
  for (const file of ['ca.pem', 'ca.key']) {
    copyFileSync(join(work, 'ours', file), join(work, 'ours-h2', file));
  }
  start(node, [join(REPO_ROOT, 'proxy', 'src', 'cli.ts')], {
    PROXY_DB_URL: cluster.url,
    PROXY_DATA_DIR: join(work, 'ours-h2'),
    PROXY_PORT: String(oursH2Port),
    PROXY_MANAGEMENT_PORT: String(oursH2Management),
    PROXY_DEVICE_PORTS: `${h2DevicePorts.start}-${h2DevicePorts.end}`,
    PROXY_UPSTREAM_CA_FILE: originCaFile,
    PROXY_DESTINATIONS: '127.0.0.0/8,localhost',
    PROXY_HTTP2: 'on',
    PROXY_WORKERS: '1',
    LOG_LEVEL: 'warn',
  });
  await waitUntil('our HTTP/2 proxy', () => isPortOpen(oursH2Port), 30_000);

  // mitmdump is Debian's mitmproxy package; without it the run still measures ours and direct.
  const hasMitmdump = (process.env.PATH ?? '')
    .split(':')
    .some((folder) => folder && existsSync(join(folder, 'mitmdump')));
  if (!hasMitmdump)
    console.error('mitmdump not on PATH (apt-get install mitmproxy): its rows are skipped');
  const mitmPort = await findFreePort();
  const mitmConf = join(work, 'mitm');
  const mitmdump = hasMitmdump
    ? start('mitmdump', [
        '--quiet',
        '--listen-host',
        '127.0.0.1',
        '--listen-port',
        String(mitmPort),
        '--set',
        `confdir=${mitmConf}`,
        '--set',
        `ssl_verify_upstream_trusted_ca=${originCaFile}`,
        '--set',
        'http2=false',
        '-w',
        join(work, 'mitm-flows'),
      ])
    : undefined;
  if (hasMitmdump) {
    await waitUntil('mitmdump', () => isPortOpen(mitmPort), 60_000);
    await waitUntil('mitmdump CA', async () => existsSync(join(mitmConf, 'mitmproxy-ca-cert.pem')));
  }
  const mitmCa = hasMitmdump ? readFileSync(join(mitmConf, 'mitmproxy-ca-cert.pem'), 'utf8') : '';
  const originCa = readFileSync(originCaFile, 'utf8');

  // `pid`: the proxy's process (with its workers), whose CPU per request is measured.
  const contenders: Array<{ name: string; http: Route; https: Route; pid?: number }> = [
    {
      name: 'direct',
      http: { proxyUrl: null },
      https: { proxyUrl: null, ca: originCa },
    },
    {
      name: 'ours',
      pid: ours.pid,
      http: { proxyUrl: `http://127.0.0.1:${ourPort}` },
      https: { proxyUrl: `http://127.0.0.1:${ourPort}`, ca: ourCa },
    },
    {
      name: oursWorkersName,
      pid: oursWorkers.pid,
      http: { proxyUrl: `http://127.0.0.1:${oursWorkers.port}` },
      https: { proxyUrl: `http://127.0.0.1:${oursWorkers.port}`, ca: ourCa },
    },
    ...(hasMitmdump
      ? [
          {
            name: 'mitmdump',
            pid: mitmdump?.pid,
            http: { proxyUrl: `http://127.0.0.1:${mitmPort}` },
            https: { proxyUrl: `http://127.0.0.1:${mitmPort}`, ca: mitmCa },
          },
        ]
      : []),
  ];
  const httpUrl = `http://127.0.0.1:${ports.http}/bench`;
  const httpsUrl = `https://localhost:${ports.https}/bench`;

  const results: Record<string, Record<string, LoadResult>> = {};
  const cpuPerRequest: Record<string, Record<string, number>> = {};
  /** A contender's name as a DNS label (`ours ×2` → `ours-2`) for its first-hit host names. */
  const hostLabel = (name: string) => name.replace(/[^a-z0-9]+/g, '-');
  for (const contender of contenders) {
    const row: Record<string, LoadResult> = {};
    const cpu: Record<string, number> = {};
    cpuPerRequest[contender.name] = cpu;
    // The proxy's CPU per request: a figure a busy shared machine moves far less than req/s.
    const withCpu = async (scenario: string, run: () => Promise<LoadResult>) => {
      const before = contender.pid ? processTreeCpuMs(contender.pid) : 0;
      row[scenario] = await run();
      if (contender.pid) {
        cpu[scenario] =
          ((processTreeCpuMs(contender.pid) - before) * 1000) / row[scenario].requests;
      }
    };
    await withCpu('http c=1', () => closedLoop(httpUrl, contender.http, 1, seconds));
    await withCpu('http c=16', () => closedLoop(httpUrl, contender.http, 16, seconds));
    await withCpu('https c=1', () => closedLoop(httpsUrl, contender.https, 1, seconds));
    await withCpu('https c=16', () => closedLoop(httpsUrl, contender.https, 16, seconds));
    row['https new connection each'] = await newConnectionEach(
      httpsUrl,
      () => contender.https,
      Number(values.sequential),
    );
    if (contender.name !== 'direct') {
      const hits = Number(values['first-hits']);
      const ipUrl = `https://127.0.0.1:${ports.https}/bench`;
      row['first hit, new name'] = await newConnectionEach(
        ipUrl,
        (index) => ({
          ...contender.https,
          servername: `cold-${index}.${hostLabel(contender.name)}.test`,
        }),
        hits,
      );
      row['first hit, known name'] = await newConnectionEach(
        ipUrl,
        () => ({ ...contender.https, servername: `warm.${hostLabel(contender.name)}.test` }),
        hits,
      );
    }
    results[contender.name] = row;
    console.error(`measured ${contender.name}`);
  }

  // HTTP/2 end to end and gRPC: direct, and through ours with HTTP/2 on. mitmdump is
  // left out here: the rows above run it with HTTP/2 off, like ours.
  const h2Url = `https://localhost:${ports.h2}/bench`;
  const grpcTarget = `localhost:${ports.grpc}`;
  const h2Scenario = 'h2 c=16 (HTTP/2 both sides)';
  const grpcScenario = 'gRPC unary c=16';
  for (const [name, proxyUrl, ca] of [
    ['direct', null, originCa],
    ['ours', `http://127.0.0.1:${oursH2Port}`, ourCa],
  ] as const) {
    const row = results[name] as Record<string, LoadResult>;
    row[h2Scenario] = await closedLoop(h2Url, { proxyUrl, ca, h2: true }, 16, seconds);
    row[grpcScenario] = await grpcClosedLoop({
      target: grpcTarget,
      ca,
      proxyUrl,
      concurrency: 16,
      seconds,
    });
  }
  console.error('measured HTTP/2 and gRPC');

  // Signing alone, in this process: what a new host costs the proxy before any network work.
  const signer = await LeafCertificateCache.create(
    loadOrCreateCertificateAuthority(join(work, 'signing-ca')),
  );
  const signings = 200;
  const signingStarted = performance.now();
  for (let index = 0; index < signings; index += 1) await signer.contextFor(`sign-${index}.test`);
  const signingMs = (performance.now() - signingStarted) / signings;

  // Captures: how fast they land, and whether any is lost at a sustained rate.
  const pool = new pg.Pool({ connectionString: cluster.url, max: 1 });
  const countEntries = async () =>
    Number(
      (await pool.query<{ n: string }>('select count(*) as n from public.entries')).rows[0]?.n,
    );
  const before = await countEntries();
  const rate = Number(values.rate);
  const sustainSeconds = Number(values.sustain);
  const sustained = await openLoop(
    (index) => `http://127.0.0.1:${ports.http}/sustained/${index}`,
    contenders[2]?.http as Route,
    rate,
    sustainSeconds,
  );
  const drainStarted = performance.now();
  let stored = 0;
  await waitUntil(
    'captures to land',
    async () => {
      stored = (await countEntries()) - before;
      return stored >= sustained.requests;
    },
    60_000,
    100,
  ).catch(() => undefined);
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  const sustainedStored = Number(
    (
      await pool.query<{ n: string }>(
        `select count(distinct path) as n from public.entries where path like '/sustained/%'`,
      )
    ).rows[0]?.n,
  );
  await pool.end();

  const resume = await measureResumeLatency({
    databaseUrl: cluster.url,
    proxyPort: oursWorkers.port,
    managementPort: oursWorkers.management,
    originHttpPort: ports.http,
    count: Number(values.held),
    logger,
  });
  console.error('measured breakpoint resumes');

  const f = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');
  const lines: string[] = [];
  lines.push(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`,
  );
  lines.push('');
  lines.push(
    '| scenario | contender | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms | errors | proxy CPU µs/request |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const scenario of Object.keys(results.ours ?? {})) {
    const direct = results.direct?.[scenario];
    for (const contender of contenders) {
      const result = results[contender.name]?.[scenario];
      if (!result) continue;
      const added = (field: 'p50' | 'p99') =>
        direct && contender.name !== 'direct' ? f(result[field] - direct[field]) : '';
      lines.push(
        `| ${scenario} | ${contender.name} | ${result.perSecond.toFixed(0)} | ${f(result.p50)} | ${f(result.p99)} | ${added('p50')} | ${added('p99')} | ${result.errors} | ${cpuPerRequest[contender.name]?.[scenario]?.toFixed(0) ?? ''} |`,
      );
    }
  }
  lines.push('');
  // Each of ours against mitmdump, and against the direct connection: the ceiling, since the
  // origin and the client share the cores with whichever proxy runs.
  const ratio = (name: string, over: string, scenario: string) =>
    f(
      (results[name]?.[scenario]?.perSecond ?? Number.NaN) /
        (results[over]?.[scenario]?.perSecond ?? Number.NaN),
    );
  lines.push(
    `| req/s ratio | ours ÷ mitmdump | ${oursWorkersName} ÷ mitmdump | ours ÷ direct | ${oursWorkersName} ÷ direct |`,
  );
  lines.push('|---|---|---|---|---|');
  for (const scenario of [
    'http c=1',
    'http c=16',
    'https c=1',
    'https c=16',
    'https new connection each',
  ]) {
    lines.push(
      `| ${scenario} | ${ratio('ours', 'mitmdump', scenario)} | ${ratio(oursWorkersName, 'mitmdump', scenario)} | ${ratio('ours', 'direct', scenario)} | ${ratio(oursWorkersName, 'direct', scenario)} |`,
    );
  }
  const certCost = (name: string) =>
    (results[name]?.['first hit, new name']?.p50 ?? Number.NaN) -
    (results[name]?.['first hit, known name']?.p50 ?? Number.NaN);
  lines.push('');
  lines.push(
    `first-hit cost of a new name (p50 new name − p50 known name, end to end): ours ${f(certCost('ours'))} ms, mitmdump ${f(certCost('mitmdump'))} ms`,
  );
  lines.push(
    `  (ours includes a new upstream TLS connection, pooled per SNI name, and the origin signing its own leaf for the name; mitmdump opens a new upstream connection for known names too) leaf signing + TLS context alone: ${f(signingMs)} ms per name`,
  );
  lines.push(
    `sustained open loop via ${oursWorkersName}: ${sustained.sent} sent at ${rate}/s for ${sustainSeconds} s, ${sustained.requests} answered (${sustained.errors} errors, p99 ${f(sustained.p99)} ms), ${sustainedStored} captured → lost ${sustained.requests - sustainedStored}; last capture landed ${drainSeconds.toFixed(1)} s after the load stopped; captures written ${(stored / (sustainSeconds + drainSeconds)).toFixed(0)}/s`,
  );
  lines.push(
    `breakpoints (${oursWorkersName}): ${resume.count} exchanges held at once, resumed one by one by REST PATCH (PostgREST) → client answered: p50 ${f(resume.fromPatch.p50)} ms, p95 ${f(resume.fromPatch.p95)} ms, max ${f(resume.fromPatch.max)} ms; from the PATCH's answer (row resumed): p50 ${f(resume.fromCommit.p50)} ms, p95 ${f(resume.fromCommit.p95)} ms, max ${f(resume.fromCommit.max)} ms; ${resume.errors} errors`,
  );
  console.log(lines.join('\n'));
} finally {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null) resolve(undefined);
          else child.once('exit', resolve);
        }),
    ),
  );
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
  rmSync(dbDir, { recursive: true, force: true });
}
if (profileDir) writeFlameGraph(profileDir);

/** The profile our proxy wrote on exit, as a flame graph and a self-time table. */
function writeFlameGraph(dir: string) {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) {
    console.error(`no .cpuprofile in ${dir}`);
    return;
  }
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  writeFileSync(
    join(dir, 'ours.svg'),
    renderFlameGraph(profile, 'capture proxy under bench:proxy (every scenario of one run)'),
  );
  const summary = summarizeSelfTime(profile);
  const lines = [`profile: ${join(dir, file)}, flame graph ${join(dir, 'ours.svg')}`, ''];
  lines.push('| area (self time) | share |', '|---|---|');
  for (const area of summary.areas) lines.push(`| ${area.name} | ${area.percent.toFixed(1)}% |`);
  lines.push('', '| frame (self time) | share |', '|---|---|');
  for (const frame of summary.frames)
    lines.push(`| \`${frame.name}\` | ${frame.percent.toFixed(1)}% |`);
  console.log(lines.join('\n'));
}
