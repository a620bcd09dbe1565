// Devices on the proxy (002 §2.3, §4.4, §5) against a real Postgres: /allocate with certificate
// bundle credentials (401 without, nothing recorded), the same port for the same uuid across
// renames, restarts and two daemons sharing the database under concurrent calls, the listener
// open before the answer, the PAC file (by Host, evaluated by a PAC engine, the same answer for
// free and allocated ports), attribution by port
// and by client address with device last_seen_at/device_status updates, and management URLs
// never forwarded.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPacResolver } from 'pac-resolver';
import pg from 'pg';
import pino from 'pino';
import { QuickJS } from 'quickjs-wasi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange } from '../../packages/stack/src/ports.ts';
import { until } from '../../packages/stack/test/helpers/until.ts';
import {
  type CaptureWriter,
  type CertificateAuthority,
  loadOrCreateCertificateAuthority,
  PAC_CONTENT_TYPE,
  pacBody,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { type Bundle, basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const DOMAIN = 'proxy.test';
const OWNER_A = 'ad000000-0000-4000-8000-00000000a001';
const OWNER_B = 'ad000000-0000-4000-8000-00000000b001';
const uuidOf = (n: number) => `de000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

let database: CaptureDatabase;
let pool: pg.Pool;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let daemonA: RunningProxy;
let daemonB: RunningProxy;
let range: { start: number; end: number };
let bundleA: Bundle;
let bundleB: Bundle;

function startDaemon(host: string, managementPort = 0): Promise<RunningProxy> {
  return startProxy({
    port: 0,
    managementPort,
    host,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    devices: { pool, proxyDomain: DOMAIN, portRange: range, refreshIntervalMs: 500 },
    logger,
  });
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(options: {
  port: number;
  host?: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  localAddress?: string;
}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: options.host ?? '127.0.0.1',
        port: options.port,
        path: options.path,
        method: options.method ?? 'GET',
        headers: options.headers,
        localAddress: options.localAddress,
        agent: false,
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

function allocate(
  daemon: RunningProxy,
  body: unknown,
  bundle: Bundle | null = bundleA,
  extra: { localAddress?: string; host?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (bundle) {
    headers.authorization = basicAuthorization(bundle);
  }
  return send({
    port: daemon.managementPort as number,
    host: extra.host ?? '127.0.0.1',
    path: '/allocate',
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    localAddress: extra.localAddress,
  });
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => undefined); // idle clients see the cluster stop at the end
  await createUser(pool, OWNER_A, 'a@proxy.test');
  await createUser(pool, OWNER_B, 'b@proxy.test');
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1']);
  range = await findFreePortRange(30, ['127.0.0.1', '127.0.0.2']);
  writer = database.writer();
  daemonA = await startDaemon('127.0.0.1');
  daemonB = await startDaemon('127.0.0.2');
  bundleA = await issueBundle(pool, OWNER_A);
  bundleB = await issueBundle(pool, OWNER_B);
});

afterAll(async () => {
  await daemonA?.stop();
  await daemonB?.stop();
  await writer?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe('certificate bundles', () => {
  it('carry the CA the proxy serves', async () => {
    expect(bundleA.ca_certificate).toBe(ca.certPem);
    const served = await send({ port: daemonA.managementPort as number, path: '/ca.pem' });
    expect(served.body).toBe(ca.certPem);
  });
});

describe('POST /allocate', () => {
  it('answers 401 without credentials or with wrong ones, and records nothing', async () => {
    const body = { uuid: uuidOf(1), deviceName: 'Nobody', country: 'DE' };
    const missing = await allocate(daemonA, body, null);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Basic realm=/);
    const wrong = await allocate(daemonA, body, { ...bundleA, password: 'guessed' });
    expect(wrong.status).toBe(401);
    const devices = await database.query('select 1 from public.devices where uuid = $1', [
      uuidOf(1),
    ]);
    expect(devices).toHaveLength(0);
  });

  it('refuses bad requests with 400, other methods with 405', async () => {
    for (const body of [
      { uuid: 'not-a-uuid', deviceName: 'x' },
      { uuid: uuidOf(2) },
      { uuid: uuidOf(2), deviceName: '   ' },
      { uuid: uuidOf(2), deviceName: 'x', country: 'Germany' },
    ]) {
      const reply = await allocate(daemonA, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(reply.body)).toMatchObject({ error: 'invalid_request' });
    }
    const get = await send({ port: daemonA.managementPort as number, path: '/allocate' });
    expect(get.status).toBe(405);
  });

  it('allocates a port, records the device for the bundle owner, and listens before answering', async () => {
    const reply = await allocate(daemonA, {
      uuid: uuidOf(10),
      deviceName: 'Pixel 9',
      country: 'de',
    });
    expect(reply.status).toBe(200);
    const body = JSON.parse(reply.body);
    expect(body).toEqual({
      port: expect.any(Number),
      baseDomain: DOMAIN,
      uuid: uuidOf(10),
      deviceName: 'Pixel 9',
    });
    expect(body.port).toBeGreaterThanOrEqual(range.start);
    expect(body.port).toBeLessThanOrEqual(range.end);
    // No wait: the port accepts connections as soon as the answer is in.
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(body.port, '127.0.0.1', () => {
        socket.destroy();
        resolve();
      });
      socket.on('error', reject);
    });
    const [device] = await database.query<{ owner_user_id: string; name: string; country: string }>(
      'select owner_user_id, name, country from public.devices where uuid = $1',
      [uuidOf(10)],
    );
    expect(device).toEqual({ owner_user_id: OWNER_A, name: 'Pixel 9', country: 'DE' });
  });

  it('gives the same uuid the same port after a rename, and the PAC URL stays', async () => {
    const first = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(11), deviceName: 'Old' })).body,
    );
    const renamed = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(11), deviceName: 'New name' })).body,
    );
    expect(renamed).toMatchObject({ port: first.port, deviceName: 'New name' });
    const pac = await send({
      port: daemonA.managementPort as number,
      path: '/proxy.pac',
      headers: { host: `${first.port}.${DOMAIN}` },
    });
    expect(pac.body).toBe(pacBody(DOMAIN, first.port));
  });

  it('refuses a device that belongs to another account with 403', async () => {
    const reply = await allocate(daemonA, { uuid: uuidOf(10), deviceName: 'Stolen' }, bundleB);
    expect(reply.status).toBe(403);
    const [device] = await database.query<{ owner_user_id: string; name: string }>(
      'select owner_user_id, name from public.devices where uuid = $1',
      [uuidOf(10)],
    );
    expect(device).toEqual({ owner_user_id: OWNER_A, name: 'Pixel 9' });
  });

  it('hands out one port per uuid under concurrent calls on two daemons sharing the database', async () => {
    const uuids = Array.from({ length: 8 }, (_, index) => uuidOf(100 + index));
    // Each device calls from its own address: calls in flight hold places in their address's
    // /allocate failure count until answered, and 24 at once from one address would
    // meet the limit this file's earlier refusals have partly used.
    const calls = uuids.flatMap((uuid, index) => {
      const from = { localAddress: `127.0.3.${index + 1}` };
      return [
        allocate(daemonA, { uuid, deviceName: `c${index}` }, bundleA, from),
        allocate(daemonB, { uuid, deviceName: `c${index}` }, bundleA, {
          ...from,
          host: '127.0.0.2',
        }),
        allocate(daemonB, { uuid, deviceName: `c${index}` }, bundleA, {
          ...from,
          host: '127.0.0.2',
        }),
      ];
    });
    const replies = await Promise.all(calls);
    for (const reply of replies) expect(reply.status, reply.body).toBe(200);
    const portsByUuid = new Map<string, Set<number>>();
    for (const reply of replies) {
      const { uuid, port } = JSON.parse(reply.body);
      portsByUuid.set(uuid, new Set([...(portsByUuid.get(uuid) ?? []), port]));
    }
    for (const ports of portsByUuid.values()) expect(ports.size).toBe(1);
    const distinct = new Set([...portsByUuid.values()].map((ports) => [...ports][0]));
    expect(distinct.size).toBe(uuids.length);
  });

  it('gives a new device another port when its first one is taken on this host', async () => {
    const [{ port: next }] = (await database.query<{ port: number }>(
      `select candidate as port from generate_series($1::int, $2::int) as candidate
       where not exists (select 1 from public.device_ports p where p.port = candidate)
       order by candidate limit 1`,
      [range.start, range.end],
    )) as [{ port: number }];
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(next, '127.0.0.1', resolve));
    try {
      const reply = await allocate(daemonA, { uuid: uuidOf(13), deviceName: 'Squatted' });
      expect(reply.status, reply.body).toBe(200);
      expect(JSON.parse(reply.body).port).not.toBe(next);
      const held = await database.query('select 1 from public.device_ports where port = $1', [
        next,
      ]);
      expect(held).toEqual([]);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it('stops listening on the port of a deleted device', async () => {
    const { port } = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(14), deviceName: 'Gone' })).body,
    );
    await database.query('delete from public.devices where uuid = $1', [uuidOf(14)]);
    await until(async () => {
      const health = JSON.parse(
        (await send({ port: daemonA.managementPort as number, path: '/health' })).body,
      );
      return health.listeners.includes(port) ? undefined : true;
    });
  });

  it('keeps every port across a restart, listening from the start', async () => {
    const before = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(12), deviceName: 'R' })).body,
    );
    await daemonA.stop();
    daemonA = await startDaemon('127.0.0.1');
    // Listening again before any allocate call: the device reconnects on its own.
    const health = JSON.parse(
      (await send({ port: daemonA.managementPort as number, path: '/health' })).body,
    );
    expect(health.listeners).toContain(before.port);
    const after = JSON.parse((await allocate(daemonA, { uuid: uuidOf(12), deviceName: 'R' })).body);
    expect(after.port).toBe(before.port);
  });
});

describe('PAC', () => {
  let port: number;
  beforeAll(async () => {
    port = JSON.parse((await allocate(daemonA, { uuid: uuidOf(20), deviceName: 'PAC' })).body).port;
  });

  it('serves one FindProxyForURL body at /, /proxy.pac and /wpad.dat with the PAC type', async () => {
    const bodies = [];
    for (const path of ['/', '/proxy.pac', '/wpad.dat']) {
      const reply = await send({
        port: daemonA.managementPort as number,
        path,
        headers: { host: `${port}.${DOMAIN}` },
      });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toBe(PAC_CONTENT_TYPE);
      bodies.push(reply.body);
    }
    expect(new Set(bodies).size).toBe(1);
    expect(bodies[0]).toContain(`return "PROXY ${DOMAIN}:${port}; DIRECT";`);
  });

  it('evaluates in a PAC engine to the device port with DIRECT as fallback', async () => {
    const reply = await send({
      port: daemonA.port,
      path: `http://${port}.${DOMAIN}/proxy.pac`,
    });
    const findProxy = createPacResolver(await QuickJS.create(), reply.body);
    expect(await findProxy('https://example.com/path?q=1')).toBe(`PROXY ${DOMAIN}:${port}; DIRECT`);
    expect(await findProxy('http://10.1.2.3/')).toBe(`PROXY ${DOMAIN}:${port}; DIRECT`);
  });

  it('answers a free port exactly as an allocated one, so the answer tells no port apart', async () => {
    const freePort = range.end; // never allocated in this file
    const fetchPac = (forPort: number) =>
      send({
        port: daemonA.managementPort as number,
        path: '/proxy.pac',
        headers: { host: `${forPort}.${DOMAIN}` },
      });
    const [allocated, free] = await Promise.all([fetchPac(port), fetchPac(freePort)]);
    const { date: _allocatedDate, ...allocatedHeaders } = allocated.headers;
    const { date: _freeDate, ...freeHeaders } = free.headers;
    expect(free.status).toBe(allocated.status);
    expect(freeHeaders).toEqual(allocatedHeaders);
    expect(allocated.body).toBe(pacBody(DOMAIN, port));
    expect(free.body).toBe(pacBody(DOMAIN, freePort));
    // Nothing was opened for the free port: a client following it falls back to DIRECT.
    const health = JSON.parse(
      (await send({ port: daemonA.managementPort as number, path: '/health' })).body,
    );
    expect(health.listeners).not.toContain(freePort);
  });

  it('answers 404 for a non-numeric or out-of-range subdomain', async () => {
    for (const host of [`phone.${DOMAIN}`, `1x.${DOMAIN}`, `0.${DOMAIN}`, `70000.${DOMAIN}`]) {
      const reply = await send({
        port: daemonA.managementPort as number,
        path: '/proxy.pac',
        headers: { host },
      });
      expect(reply.status, host).toBe(404);
    }
  });

  it('is served by a daemon that did not allocate the port (shared database)', async () => {
    const reply = await send({
      port: daemonB.managementPort as number,
      host: '127.0.0.2',
      path: '/wpad.dat',
      headers: { host: `${port}.${DOMAIN}` },
    });
    expect(reply.body).toBe(pacBody(DOMAIN, port));
  });
});

describe('attribution and device liveness', () => {
  it('attributes traffic on a device port to that device, marks it pac, and updates last_seen_at', async () => {
    const { port } = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(30), deviceName: 'P' })).body,
    );
    const reply = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/attributed/port`,
    });
    expect(reply.status).toBe(200);
    const entry = await database.entryWhere('path', '/attributed/port');
    expect(entry.device_uuid).toBe(uuidOf(30));
    expect(entry.payload).toMatchObject({
      attribution: { rule: 'port', device_uuid: uuidOf(30) },
      source: 'pac',
      listenerPort: port,
    });
    const [device] = await until(async () => {
      const rows = await database.query<{ online: boolean; source: string }>(
        `select d.last_seen_at > now() - interval '1 minute' as online, s.source
         from public.devices d join public.device_status s on s.device_uuid = d.uuid
         where d.uuid = $1 and d.last_seen_at is not null`,
        [uuidOf(30)],
      );
      return rows.length > 0 ? rows : undefined;
    });
    expect(device).toEqual({ online: true, source: 'pac' });
  });

  it('attributes traffic on the shared port by client address, else to the proxy', async () => {
    const allocated = await allocate(daemonA, { uuid: uuidOf(31), deviceName: 'IP' }, bundleA, {
      localAddress: '127.0.0.7',
    });
    expect(allocated.status).toBe(200);
    await send({
      port: daemonA.port,
      path: `http://127.0.0.1:${origins.httpPort}/attributed/ip`,
      localAddress: '127.0.0.7',
    });
    await send({
      port: daemonA.port,
      path: `http://127.0.0.1:${origins.httpPort}/attributed/none`,
      localAddress: '127.0.0.8',
    });
    const byIp = await database.entryWhere('path', '/attributed/ip');
    expect(byIp.device_uuid).toBe(uuidOf(31));
    expect(byIp.payload).toMatchObject({
      attribution: { rule: 'ip', device_uuid: uuidOf(31) },
      source: 'manual',
    });
    const unattributed = await database.entryWhere('path', '/attributed/none');
    expect(unattributed.device_uuid).toBeNull();
    expect(unattributed.payload.attribution).toEqual({ rule: 'proxy', device_uuid: null });
  });
});

describe('TLS to the proxy itself', () => {
  it('attributes a client that names its device port in the SNI (the chain after port)', async () => {
    const { port } = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(32), deviceName: 'S' })).body,
    );
    const caFile = join(caDir, 'ca.pem');
    const proxyName = `${port}.${DOMAIN}`;
    const result = await curl([
      '--proxy',
      `https://${proxyName}:${daemonA.port}`,
      '--proxy-cacert',
      caFile,
      '--resolve',
      `${proxyName}:${daemonA.port}:127.0.0.1`,
      '--interface',
      '127.0.0.9', // an address no device registered: only the SNI can attribute
      // Not the address that allocated the port: the device proves itself with its bundle.
      '--proxy-user',
      `${bundleA.bundle_id}:${bundleA.password}`,
      `http://127.0.0.1:${origins.httpPort}/attributed/sni`,
    ]);
    expect(result.stderr).toBe('');
    const entry = await database.entryWhere('path', '/attributed/sni');
    expect(entry.device_uuid).toBe(uuidOf(32));
    expect(entry.payload).toMatchObject({
      attribution: { rule: 'sni', device_uuid: uuidOf(32) },
      source: 'pac',
      listenerPort: daemonA.port,
    });
  });
});

describe('management URLs', () => {
  it('are answered locally on every listener and for every Host, never forwarded', async () => {
    const { port } = JSON.parse(
      (await allocate(daemonA, { uuid: uuidOf(40), deviceName: 'M' })).body,
    );
    const before = origins.hits.size;
    const cases = [
      { port: daemonA.port, path: `http://${DOMAIN}/health` },
      {
        port: daemonA.port,
        path: '/health',
        headers: { host: `origin.example:${origins.httpPort}` },
      },
      { port, path: `http://${port}.${DOMAIN}/wpad.dat` },
      { port, path: '/ca.der' },
      { port: daemonA.port, path: `http://127.0.0.1:${daemonA.port}/health` },
    ];
    for (const request of cases) {
      const reply = await send(request);
      expect(reply.status, request.path).toBe(200);
    }
    expect(origins.hits.size).toBe(before);
  });
});
