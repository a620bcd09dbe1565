// The proxy daemon (cli.ts, its own process) stopped or killed while it holds breakpoints
//: SIGTERM answers every held client 503 and closes their rows before exiting;
// SIGKILL cuts the held clients' connections (a failure, not a hang) and leaves the rows held
// until the same daemon (same data dir, so the same instance id) starts again and closes them
// as proxy_restarted. Nothing stays held.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange, isPortOpen, waitUntil } from '../../packages/stack/src/ports.ts';
import { REPO_ROOT } from '../../packages/stack/src/stack.ts';
import { basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { type Origins, startOrigins } from './helpers/origins.ts';
import { requestThroughProxy } from './helpers/through-proxy.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const OWNER = 'ad000000-0000-4000-8000-0000000d0001';
const DEVICE = 'de000000-0000-4000-8000-0000000d0001';

let database: CaptureDatabase;
let pool: pg.Pool;
let origins: Origins;
let dataDir: string;
let port: number;
let managementPort: number;
let range: { start: number; end: number };
let daemon: ChildProcess | undefined;

async function startDaemon(): Promise<ChildProcess> {
  const child = spawn(
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
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  await waitUntil('the proxy', () => isPortOpen(port), 30_000);
  return child;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

/** A request through the shared port: its status and body, or the socket error's code. */
function viaProxy(path: string) {
  return requestThroughProxy({
    proxyPort: port,
    url: `http://127.0.0.1:${origins.httpPort}${path}`,
  });
}

const held = (like: string) =>
  database.query<{
    id: string;
    resumed_at: Date | null;
    resolution: string | null;
    closed_by_proxy: string | null;
  }>(
    'select id, resumed_at, resolution, closed_by_proxy from public.breakpoint_events where url like $1 order by id',
    [like],
  );

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => undefined);
  origins = await startOrigins(['127.0.0.1']);
  dataDir = mkdtempSync(join(tmpdir(), 'proxy-restart-'));
  // One block of free ports: the shared and management ports, then three device ports.
  const block = await findFreePortRange(5);
  port = block.start;
  managementPort = block.start + 1;
  range = { start: block.start + 2, end: block.end };
  daemon = await startDaemon();
  await createUser(pool, OWNER, 'owner@restart.test');
  const bundle = await issueBundle(pool, OWNER);
  const allocated = await fetch(`http://127.0.0.1:${managementPort}/allocate`, {
    method: 'POST',
    headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
    body: JSON.stringify({ uuid: DEVICE, deviceName: 'restart phone' }),
  });
  expect(allocated.status).toBe(200);
  await pool.query(`insert into public.settings_device (device_uuid, data) values ($1, $2)`, [
    DEVICE,
    JSON.stringify({ breakpoints: ['127.0.0.1/restart/*'] }),
  ]);
}, 90_000);

afterAll(async () => {
  if (daemon && daemon.exitCode === null) {
    daemon.kill('SIGKILL');
    await exited(daemon);
  }
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Sends probes until the pattern has reached the daemon and one is held; returns its answer,
 * still pending (wrapped: an async function returning a promise would wait for it).
 */
async function holdOne(path: string) {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    let answered = false;
    const pending = viaProxy(`${path}-${attempt}`);
    void pending.then(() => {
      answered = true;
    });
    for (;;) {
      if ((await held(`%${path}-${attempt}`)).length > 0) return { pending };
      if (answered) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error('never held');
}

describe('a daemon holding breakpoints', () => {
  it('answers held clients 503 on SIGTERM and closes their rows before it exits', async () => {
    const pending = [
      (await holdOne('/restart/term-a')).pending,
      (await holdOne('/restart/term-b')).pending,
    ];
    daemon?.kill('SIGTERM');
    expect(await exited(daemon as ChildProcess)).toBe(0);
    for (const answer of await Promise.all(pending)) {
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body as string)).toMatchObject({ error: 'proxy_stopping' });
    }
    for (const row of await held('%/restart/term-%')) {
      if (row.resumed_at === null) throw new Error(`row ${row.id} is still held`);
    }
    expect(
      (await held('%/restart/term-%')).filter((row) => row.closed_by_proxy === 'proxy_stopped')
        .length,
    ).toBe(2);
  });

  it('on SIGKILL cuts the held clients, and closes their rows when it starts again', async () => {
    daemon = await startDaemon();
    const pending = [
      (await holdOne('/restart/kill-a')).pending,
      (await holdOne('/restart/kill-b')).pending,
    ];
    daemon.kill('SIGKILL');
    await exited(daemon);
    for (const answer of await Promise.all(pending)) expect(answer.error).toBe('ECONNRESET');
    const left = await held('%/restart/kill-%');
    expect(left.filter((row) => row.resumed_at === null)).toHaveLength(2);
    daemon = await startDaemon();
    const after = await held('%/restart/kill-%');
    expect(after.filter((row) => row.closed_by_proxy === 'proxy_restarted')).toHaveLength(2);
    expect(after.every((row) => row.resumed_at !== null)).toBe(true);
    // And it holds again as before.
    const { pending: again } = await holdOne('/restart/after');
    const [row] = (await held('%/restart/after-%')).filter((one) => one.resumed_at === null);
    await pool.query(`update public.breakpoint_events set resolution = 'continue' where id = $1`, [
      row?.id,
    ]);
    expect((await again).status).toBe(200);
  });
});
