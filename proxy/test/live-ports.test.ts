// Ports for devices added anywhere (002 §4.4 "dashboard-added devices have a port allocated
// automatically"): a device inserted over REST (stock PostgREST, a user's token) gets its port
// without /allocate, both proxies sharing the database listen on it (told by the database's
// change events: their fallback re-read is set to 10 minutes here, so a port opening within the
// waits below is the change feed's doing),
// its PAC URL answers, traffic on it is the device's (with the owner's bundle as proxy
// credentials, since no address is bound yet), /allocate later keeps the port, concurrent
// inserts never share one, and a deleted device's port closes everywhere.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange } from '../../packages/stack/src/ports.ts';
import { until } from '../../packages/stack/test/helpers/until.ts';
import {
  type CaptureWriter,
  type CertificateAuthority,
  loadOrCreateCertificateAuthority,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { type Bundle, basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';
import { type Rest, startRest } from './helpers/rest.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const DOMAIN = 'proxy.test';
const OWNER = 'ad000000-0000-4000-8000-0000000c0001';

let database: CaptureDatabase;
let pool: pg.Pool;
let rest: Rest;
let token: string;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let range: { start: number; end: number };
let proxyA: RunningProxy;
let proxyB: RunningProxy;
let bundle: Bundle;

function startDaemon(host: string): Promise<RunningProxy> {
  return startProxy({
    port: 0,
    managementPort: 0,
    host,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    // The periodic re-read is far off: only the notification can open the port in time.
    devices: { pool, proxyDomain: DOMAIN, portRange: range, refreshIntervalMs: 600_000 },
    logger,
  });
}

function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  host = '127.0.0.1',
): Promise<{ status: number; body: string; contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host, port, path, headers, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          body,
          contentType: response.headers['content-type'],
        }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

const portOf = async (uuid: string) =>
  (
    await database.query<{ port: number }>(
      'select port from public.device_ports where device_uuid = $1',
      [uuid],
    )
  )[0]?.port;

async function insertDeviceOverRest(name: string): Promise<{ uuid: string }> {
  const created = await rest.call(token, 'POST', '/devices', { name, os: 'android' });
  expect(created.status).toBe(201);
  return { uuid: (created.body as Array<{ uuid: string }>)[0]?.uuid as string };
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 8 });
  pool.on('error', () => undefined);
  rest = await startRest(database.url, logger);
  await createUser(pool, OWNER, 'owner@ports.test');
  token = await rest.tokenFor(OWNER);
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1']);
  range = await findFreePortRange(12, ['127.0.0.1', '127.0.0.2']);
  writer = database.writer();
  proxyA = await startDaemon('127.0.0.1');
  proxyB = await startDaemon('127.0.0.2');
  bundle = await issueBundle(pool, OWNER);
}, 60_000);

afterAll(async () => {
  await proxyA?.stop();
  await proxyB?.stop();
  await writer?.stop();
  await rest?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe('a device inserted over REST', () => {
  let uuid: string;
  let port: number;

  it('gets a port at once, served by both proxies with no /allocate', async () => {
    const inserted = await insertDeviceOverRest('dashboard phone');
    uuid = inserted.uuid;
    port = (await portOf(uuid)) as number;
    expect(port).toBeGreaterThanOrEqual(range.start);
    expect(port).toBeLessThanOrEqual(range.end);
    await until(async () =>
      (await listening('127.0.0.1', port)) && (await listening('127.0.0.2', port))
        ? true
        : undefined,
    );
    expect(proxyA.registry?.deviceForPort(port)).toEqual({ uuid, source: 'pac' });
    expect(proxyB.registry?.deviceForPort(port)).toEqual({ uuid, source: 'pac' });
    // The owner reads its port over REST too (what the dashboard shows).
    const read = await rest.call(token, 'GET', `/device_ports?device_uuid=eq.${uuid}&select=port`);
    expect(read.body).toEqual([{ port }]);
  });

  it('has a PAC URL that points at its port', async () => {
    for (const proxy of [proxyA, proxyB]) {
      const pac = await get(
        proxy.managementPort as number,
        '/proxy.pac',
        { host: `${port}.${DOMAIN}` },
        proxy === proxyA ? '127.0.0.1' : '127.0.0.2',
      );
      expect(pac.status).toBe(200);
      expect(pac.contentType).toBe('application/x-ns-proxy-autoconfig');
      expect(pac.body).toContain(`PROXY ${DOMAIN}:${port}; DIRECT`);
    }
  });

  it("carries the device's traffic with the owner's bundle, and refuses it without (no address bound yet)", async () => {
    const target = `http://127.0.0.1:${origins.httpPort}/live-ports/first`;
    const refused = await get(port, target);
    expect(refused.status).toBe(407);
    const served = await get(port, target, { 'proxy-authorization': basicAuthorization(bundle) });
    expect(served.status).toBe(200);
    const entry = await database.entryWhere('path', '/live-ports/first');
    expect(entry.device_uuid).toBe(uuid);
    expect(entry.payload.attribution).toEqual({ rule: 'port', device_uuid: uuid });
  });

  it('keeps its port when the device later calls /allocate (which binds its address)', async () => {
    const allocated = await fetch(`http://127.0.0.1:${proxyA.managementPort}/allocate`, {
      method: 'POST',
      headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
      body: JSON.stringify({ uuid, deviceName: 'dashboard phone' }),
    });
    expect(allocated.status).toBe(200);
    expect(((await allocated.json()) as { port: number }).port).toBe(port);
    const target = `http://127.0.0.1:${origins.httpPort}/live-ports/bound`;
    await until(async () => ((await get(port, target)).status === 200 ? true : undefined), 3000);
  });

  it('closes its port on both proxies when deleted', async () => {
    const deleted = await rest.call(token, 'DELETE', `/devices?uuid=eq.${uuid}`);
    expect(deleted.status).toBe(200);
    await until(async () =>
      !(await listening('127.0.0.1', port)) && !(await listening('127.0.0.2', port))
        ? true
        : undefined,
    );
  });
});

describe('devices inserted concurrently over REST', () => {
  it('get distinct ports, and both proxies agree on every one', async () => {
    const inserted = await Promise.all(
      Array.from({ length: 8 }, (_, index) => insertDeviceOverRest(`tablet ${index}`)),
    );
    const ports = await Promise.all(inserted.map(({ uuid }) => portOf(uuid)));
    expect(new Set(ports).size).toBe(8);
    for (const port of ports) expect(port).toBeDefined();
    await until(() =>
      inserted.every(
        ({ uuid }, index) =>
          proxyA.registry?.deviceForPort(ports[index] as number)?.uuid === uuid &&
          proxyB.registry?.deviceForPort(ports[index] as number)?.uuid === uuid,
      )
        ? true
        : undefined,
    );
    for (const port of ports) {
      expect(await listening('127.0.0.1', port as number)).toBe(true);
      expect(await listening('127.0.0.2', port as number)).toBe(true);
    }
  });

  it('run out of pool without failing: the last devices are created without a port', async () => {
    const more = await Promise.all(
      Array.from({ length: 13 }, (_, index) => insertDeviceOverRest(`extra ${index}`)),
    );
    const ports = await Promise.all(more.map(({ uuid }) => portOf(uuid)));
    // The pool has 12 ports and 8 are taken: four get one, the rest none, and no insert fails.
    expect(ports.filter((port) => port !== undefined).length).toBe(range.end - range.start + 1 - 8);
    expect(ports.some((port) => port === undefined)).toBe(true);
  });
});
