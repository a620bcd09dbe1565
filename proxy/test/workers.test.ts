// The daemon with two worker processes (cli.ts, PROXY_WORKERS=2; docs/proxy.md "Worker
// processes") against a real Postgres and real sockets. Each connection goes to one worker in
// turn, so every case below sends on several new connections and checks that both workers served:
// every capture stored exactly once whichever worker took it; a device port allocated through one
// worker open on every worker; the set-up page's live check turning green when another worker
// served the phone; breakpoints held by the worker holding the client and released by their rows;
// a worker that dies started again; a stop that leaves no process behind.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange, isPortOpen, waitUntil } from '../../packages/stack/src/ports.ts';
import { REPO_ROOT } from '../../packages/stack/src/stack.ts';
import { until } from '../../packages/stack/test/helpers/until.ts';
import { basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { type Origins, startOrigins } from './helpers/origins.ts';
import { requestThroughProxy, watchSetupStatus } from './helpers/through-proxy.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const OWNER = 'ad000000-0000-4000-8000-0000000e0001';
const DEVICE = 'de000000-0000-4000-8000-0000000e0001';
const SECOND_DEVICE = 'de000000-0000-4000-8000-0000000e0002';
/** The second device's address: a loopback alias no other case uses. */
const SECOND_PHONE = '127.0.0.6';

let database: CaptureDatabase;
let pool: pg.Pool;
let origins: Origins;
let dataDir: string;
let port: number;
let managementPort: number;
let range: { start: number; end: number };
let daemon: ChildProcess;
let devicePort: number;

interface Health {
  captures: { written: number; queued: number; spooled: number };
  workers: Array<{ index: number; pid: number; written: number }>;
}

function startDaemon(): ChildProcess {
  return spawn(
    join(REPO_ROOT, 'node_modules', '.bin', 'node'),
    [join(REPO_ROOT, 'proxy', 'src', 'cli.ts')],
    {
      env: {
        ...process.env,
        PROXY_DB_URL: database.url,
        PROXY_DATA_DIR: dataDir,
        PROXY_PORT: String(port),
        PROXY_MANAGEMENT_PORT: String(managementPort),
        PROXY_DEVICE_PORTS: `${range.start}-${range.end}`,
        PROXY_DESTINATIONS: 'public,127.0.0.0/8',
        PROXY_UPSTREAM_CA_FILE: join(dataDir, 'origin-ca.pem'),
        PROXY_WORKERS: '2',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}

/** The daemon's worker processes (its children), by pid. */
function workerPids(primary: ChildProcess): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(primary.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when it finds none
  }
}

/** Both workers up: each reports its captures, which the primary passes to every worker. */
async function bothWorkersUp(): Promise<void> {
  await waitUntil('the proxy', () => isPortOpen(port), 30_000);
  await until(async () => ((await health()).workers.length === 2 ? true : undefined), 30_000);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

async function health(): Promise<Health> {
  const response = await fetch(`http://127.0.0.1:${managementPort}/health`);
  return (await response.json()) as Health;
}

/** One request on its own connection (so the next may go to the other worker). */
function viaProxy(path: string, through = port, from = '127.0.0.1') {
  return requestThroughProxy({
    proxyPort: through,
    url: `http://127.0.0.1:${origins.httpPort}${path}`,
    from,
  });
}

/** The live check's event stream on its own connection, as the set-up page reads it. */
function watchStatus(path: string) {
  return watchSetupStatus({ host: '127.0.0.1', port: managementPort, path });
}

const capturedPaths = async (prefix: string) =>
  database.query<{ path: string; request_id: string; device_uuid: string | null }>(
    `select path, request_id, device_uuid from public.entries where path like $1`,
    [`${prefix}%`],
  );

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => undefined);
  origins = await startOrigins(['127.0.0.1']);
  dataDir = mkdtempSync(join(tmpdir(), 'proxy-workers-'));
  writeFileSync(join(dataDir, 'origin-ca.pem'), origins.originCa.certPem);
  const block = await findFreePortRange(6);
  port = block.start;
  managementPort = block.start + 1;
  range = { start: block.start + 2, end: block.end };
  daemon = startDaemon();
  await bothWorkersUp();
  await createUser(pool, OWNER, 'owner@workers.test');
  const bundle = await issueBundle(pool, OWNER);
  const allocated = await fetch(`http://127.0.0.1:${managementPort}/allocate`, {
    method: 'POST',
    headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
    body: JSON.stringify({ uuid: DEVICE, deviceName: 'workers phone' }),
  });
  expect(allocated.status).toBe(200);
  devicePort = ((await allocated.json()) as { port: number }).port;
}, 120_000);

afterAll(async () => {
  if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
    const children = workerPids(daemon);
    daemon.kill('SIGKILL');
    await exited(daemon);
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone with its primary
      }
    }
  }
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a daemon with two workers', () => {
  it('serves connections on both workers and stores every capture exactly once', async () => {
    const before = new Map(
      (await health()).workers.map((worker) => [worker.index, worker.written]),
    );
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) => viaProxy(`/workers/once/${index}`)),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const rows = await until(async () => {
      const found = await capturedPaths('/workers/once/');
      return found.length >= 40 ? found : undefined;
    });
    expect(rows).toHaveLength(40);
    expect(new Set(rows.map((row) => row.path)).size).toBe(40);
    expect(new Set(rows.map((row) => row.request_id)).size).toBe(40);
    // Both wrote some: /health sums them and lists each.
    const after = await until(async () => {
      const now = await health();
      const written = now.workers.map((worker) => worker.written - (before.get(worker.index) ?? 0));
      return written.every((count) => count > 0) && now.captures.written >= 40
        ? { now, written }
        : undefined;
    });
    expect(after.written.reduce((sum, count) => sum + count, 0)).toBe(40);
    expect(after.now.captures.written).toBe(
      after.now.workers.reduce((sum, worker) => sum + worker.written, 0),
    );
  });

  it('opens a port allocated through one worker on every worker', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, index) => viaProxy(`/workers/device/${index}`, devicePort)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    const rows = await until(async () => {
      const found = await capturedPaths('/workers/device/');
      return found.length >= 8 ? found : undefined;
    });
    expect(rows.every((row) => row.device_uuid === DEVICE)).toBe(true);
  });

  it('attributes shared-port traffic from the address of an /allocate on every worker at once', async () => {
    const bundle = await issueBundle(pool, OWNER);
    const allocated = await new Promise<number>((resolve, reject) => {
      const request = http.request(
        {
          host: '127.0.0.1',
          port: managementPort,
          path: '/allocate',
          method: 'POST',
          localAddress: SECOND_PHONE,
          agent: false,
          headers: {
            authorization: basicAuthorization(bundle),
            'content-type': 'application/json',
          },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end(JSON.stringify({ uuid: SECOND_DEVICE, deviceName: 'second phone' }));
    });
    expect(allocated).toBe(200);
    // At once, before any notification could reach the other worker: both attribute by address.
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        viaProxy(`/workers/by-address/${index}`, port, SECOND_PHONE),
      ),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const rows = await until(async () => {
      const found = await capturedPaths('/workers/by-address/');
      return found.length >= 6 ? found : undefined;
    });
    expect(rows.map((row) => row.device_uuid)).toEqual(Array(6).fill(SECOND_DEVICE));
  });

  it("turns every worker's live check green when one worker served the phone", async () => {
    const [link] = await database.query<{ token: string }>(
      'select private.issue_device_setup_link($1) as token',
      [DEVICE],
    );
    // Four streams on four connections: both workers serve some of them.
    const streams = await Promise.all(
      Array.from({ length: 4 }, () => watchStatus(`/setup/${link?.token}/status`)),
    );
    try {
      for (const stream of streams) await until(() => stream.events[0]);
      // The device is seen already (the cases above, plain HTTP): the news is its first
      // intercepted HTTPS request, on one connection, so served by one worker.
      const https = await curl([
        '--proxy',
        `http://127.0.0.1:${devicePort}`,
        '--cacert',
        join(dataDir, 'ca.pem'),
        '--output',
        '/dev/null',
        '--write-out',
        '%{http_code}',
        `https://127.0.0.1:${origins.httpsPort}/workers/https`,
      ]);
      expect(https.stdout).toBe('200');
      for (const stream of streams) {
        await until(() =>
          stream.events.some((event) => event.connection === 'https') ? true : undefined,
        );
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('holds breakpoints on both workers and releases each by its row', async () => {
    await pool.query(
      `insert into public.settings_device (device_uuid, data) values ($1, $2)
       on conflict (device_uuid) do update set data = excluded.data`,
      [DEVICE, JSON.stringify({ breakpoints: ['127.0.0.1/workers/held/*'] })],
    );
    const held = () =>
      database.query<{ id: string; proxy_instance: string }>(
        `select id, proxy_instance from public.breakpoint_events
         where url like '%/workers/held/%' and resumed_at is null`,
      );
    // Until the pattern has reached both workers: probes are held by each.
    const pending: Array<ReturnType<typeof viaProxy>> = [];
    await until(async () => {
      pending.push(viaProxy(`/workers/held/${pending.length}`, devicePort));
      pending.push(viaProxy(`/workers/held/${pending.length}`, devicePort));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const rows = await held();
      return new Set(rows.map((row) => row.proxy_instance)).size === 2 ? true : undefined;
    });
    const instances = [...new Set((await held()).map((row) => row.proxy_instance))].sort();
    expect(instances.map((instance) => instance.replace(/^.*#/, ''))).toEqual(['0', '1']);
    expect(instances[0]?.replace(/#0$/, '')).toBe(instances[1]?.replace(/#1$/, ''));
    await pool.query(
      `update public.breakpoint_events set resolution = 'continue'
       where url like '%/workers/held/%' and resumed_at is null`,
    );
    const answers = await Promise.all(pending);
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    await pool.query('delete from public.settings_device where device_uuid = $1', [DEVICE]);
  });

  it('passes a client through on every worker once it refused our certificate on one', async () => {
    const from = '127.0.0.7';
    const url = `https://127.0.0.1:${origins.httpsPort}/workers/pinned`;
    const through = (extra: string[]) =>
      curl(['--interface', from, '--proxy', `http://127.0.0.1:${port}`, ...extra, url]);
    // A client that trusts only the origin's CA (a pinned app) refuses our leaf: learned there.
    const refused = await through(['--cacert', join(dataDir, 'origin-ca.pem')]);
    expect(refused.code).toBe(60);
    // Its next tunnels, on new connections to both workers, are passed through, not decrypted
    // (`--insecure`: the origin's certificate names localhost, so only the capture tells them
    // apart: a decrypted exchange is captured as http, a passed-through tunnel as tunnel).
    const next = await Promise.all(Array.from({ length: 4 }, () => through(['--insecure'])));
    expect(next.map((result) => result.code)).toEqual([0, 0, 0, 0]);
    const tunnels = await until(async () => {
      const rows = await database.query<{ kind: string; reason: string | null }>(
        `select kind, payload #>> '{tls,passthrough,reason}' as reason from public.entries
         where payload #>> '{client,ip}' = $1 and kind in ('tunnel', 'http')`,
        [from],
      );
      return rows.length >= 4 ? rows : undefined;
    });
    expect(tunnels).toEqual(Array(4).fill({ kind: 'tunnel', reason: 'handshake_failed' }));
  });

  it('starts a worker that dies again, and serves on', async () => {
    const [victim, survivor] = workerPids(daemon);
    expect(survivor).toBeDefined();
    process.kill(victim as number, 'SIGKILL');
    await until(() => {
      const now = workerPids(daemon);
      return now.length === 2 && !now.includes(victim as number) ? true : undefined;
    }, 30_000);
    // The new worker takes connections once /health lists it (it reports once it listens).
    const restarted = await until(async () => {
      const listed = (await health()).workers.map((worker) => worker.pid).sort();
      const running = workerPids(daemon).sort();
      return listed.length === 2 && listed.join() === running.join() ? running : undefined;
    }, 30_000);
    const written = (report: Health) =>
      new Map(report.workers.map((worker) => [worker.pid, worker.written]));
    const before = written(await health());
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, index) => viaProxy(`/workers/after/${index}`)),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    // Both served some: the new worker as well as the one that stayed.
    await until(async () => {
      const now = written(await health());
      return restarted.every((pid) => (now.get(pid) ?? 0) > (before.get(pid) ?? 0))
        ? true
        : undefined;
    });
    expect((await capturedPaths('/workers/after/')).length).toBe(10);
  });

  it('stops on SIGTERM with every worker, flushing their captures', async () => {
    const children = workerPids(daemon);
    expect(children).toHaveLength(2);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, index) => viaProxy(`/workers/last/${index}`)),
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    daemon.kill('SIGTERM');
    expect(await exited(daemon)).toBe(0);
    for (const pid of children) expect(() => process.kill(pid, 0)).toThrow();
    // Written before the workers exited, not left in a queue.
    expect((await capturedPaths('/workers/last/')).length).toBe(10);
  });
});
