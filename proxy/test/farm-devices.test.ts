// Farm devices on the proxy (docs/proxy.md "Attribution"): a device marked in
// private.farm_devices has its traffic captured with the farm's source (`cdp` for the farm
// browser, `farm` for the sandboxed shell) instead of `pac`, by port and by SNI, on the daemon
// that allocated it and on one that learnt the port from the database; and since the address a
// farm device was allocated from is the farm host's, shared by all of them, it never attributes
// traffic by client address.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
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
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const DOMAIN = 'proxy.test';
const OWNER = 'ad000000-0000-4000-8000-00000000f001';
const uuidOf = (n: number) => `fa000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

let database: CaptureDatabase;
let pool: pg.Pool;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let daemon: RunningProxy;
let bundle: Bundle;
let range: { start: number; end: number };

function startDaemon(host: string): Promise<RunningProxy> {
  return startProxy({
    port: 0,
    managementPort: 0,
    host,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    devices: { pool, proxyDomain: DOMAIN, portRange: range },
    logger,
  });
}

function send(options: {
  port: number;
  host?: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  localAddress?: string;
}): Promise<{ status: number; body: string }> {
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
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The device row as the tool server makes it (as the user), marked as the farm's. */
async function markFarmDevice(uuid: string, source: 'cdp' | 'farm'): Promise<void> {
  await pool.query(
    `insert into public.devices (uuid, name, os, owner_user_id) values ($1, $2, 'linux', $3)`,
    [uuid, `Farm ${source}`, OWNER],
  );
  await pool.query(
    `insert into private.farm_devices (device_uuid, source, farm_host) values ($1, $2, 'farm-1')`,
    [uuid, source],
  );
}

async function allocate(uuid: string, localAddress = '127.0.0.1'): Promise<number> {
  const reply = await send({
    port: daemon.managementPort as number,
    path: '/allocate',
    method: 'POST',
    headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
    body: JSON.stringify({ uuid, deviceName: 'Farm device' }),
    localAddress,
  });
  expect(reply.status).toBe(200);
  return JSON.parse(reply.body).port;
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => undefined);
  await createUser(pool, OWNER, 'farm@proxy.test');
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1']);
  range = await findFreePortRange(10, ['127.0.0.1', '127.0.0.2']);
  writer = database.writer();
  daemon = await startDaemon('127.0.0.1');
  bundle = await issueBundle(pool, OWNER);
});

afterAll(async () => {
  await daemon?.stop();
  await writer?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe('traffic of farm devices', () => {
  it.each([
    ['cdp', 1],
    ['farm', 2],
  ] as const)(
    'is captured with source %s on the device port, and device_status says so',
    async (source, n) => {
      await markFarmDevice(uuidOf(n), source);
      const port = await allocate(uuidOf(n));
      const path = `/farm/port/${source}`;
      const reply = await send({ port, path: `http://127.0.0.1:${origins.httpPort}${path}` });
      expect(reply.status).toBe(200);
      const entry = await database.entryWhere('path', path);
      expect(entry.device_uuid).toBe(uuidOf(n));
      expect(entry.payload).toMatchObject({
        attribution: { rule: 'port', device_uuid: uuidOf(n) },
        source,
        listenerPort: port,
      });
      const status = await until(async () => {
        const rows = await database.query<{ source: string }>(
          `select s.source from public.device_status s join public.devices d on d.uuid = s.device_uuid
         where s.device_uuid = $1 and d.last_seen_at is not null`,
          [uuidOf(n)],
        );
        return rows[0]?.source === source ? rows[0] : undefined;
      });
      expect(status.source).toBe(source);
    },
  );

  it('is labelled by SNI as well, for a farm client on the shared port', async () => {
    await markFarmDevice(uuidOf(3), 'cdp');
    const port = await allocate(uuidOf(3));
    const proxyName = `${port}.${DOMAIN}`;
    const result = await curl([
      '--proxy',
      `https://${proxyName}:${daemon.port}`,
      '--proxy-cacert',
      join(caDir, 'ca.pem'),
      '--resolve',
      `${proxyName}:${daemon.port}:127.0.0.1`,
      // From the farm host, the address it was allocated from: a farm port takes nothing else.
      '--interface',
      '127.0.0.1',
      `http://127.0.0.1:${origins.httpPort}/farm/sni`,
    ]);
    expect(result.stderr).toBe('');
    const entry = await database.entryWhere('path', '/farm/sni');
    expect(entry.payload).toMatchObject({
      attribution: { rule: 'sni', device_uuid: uuidOf(3) },
      source: 'cdp',
    });
  });

  it('keeps an ordinary device pac beside them', async () => {
    const port = await allocate(uuidOf(4));
    await send({ port, path: `http://127.0.0.1:${origins.httpPort}/farm/ordinary` });
    const entry = await database.entryWhere('path', '/farm/ordinary');
    expect(entry.payload).toMatchObject({
      attribution: { rule: 'port', device_uuid: uuidOf(4) },
      source: 'pac',
    });
  });

  it('is labelled the same by a daemon that learnt the port from the database', async () => {
    const port = await allocate(uuidOf(1));
    const other = await startDaemon('127.0.0.2');
    try {
      await send({
        host: '127.0.0.2',
        port,
        path: `http://127.0.0.1:${origins.httpPort}/farm/other-daemon`,
      });
      const entry = await database.entryWhere('path', '/farm/other-daemon');
      expect(entry.payload).toMatchObject({
        attribution: { rule: 'port', device_uuid: uuidOf(1) },
        source: 'cdp',
      });
    } finally {
      await other.stop();
    }
  });
});

describe("a farm device's port, tried by its owner from elsewhere", () => {
  it("refuses the owner's own bundle from another address (403), capturing nothing", async () => {
    await markFarmDevice(uuidOf(8), 'cdp');
    const port = await allocate(uuidOf(8));
    const path = '/farm/phone-posing-as-farm';
    // An ordinary device of the owner would be admitted so; a farm device is not, or
    // a phone's traffic would be captured as the farm browser's.
    const reply = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}${path}`,
      headers: { 'proxy-authorization': basicAuthorization(bundle) },
      localAddress: '127.0.0.9',
    });
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('farm host only');
    expect(origins.hits.get(path)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await database.query('select 1 from public.entries where path = $1', [path])).toEqual(
      [],
    );
  });

  it('refuses /allocate of the farm device from another address, keeping its binding', async () => {
    await markFarmDevice(uuidOf(9), 'farm');
    const port = await allocate(uuidOf(9));
    const moved = await send({
      port: daemon.managementPort as number,
      path: '/allocate',
      method: 'POST',
      headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
      body: JSON.stringify({ uuid: uuidOf(9), deviceName: 'my phone' }),
      localAddress: '127.0.0.9',
    });
    expect(moved.status).toBe(403);
    expect(JSON.parse(moved.body)).toMatchObject({ error: 'farm_device' });
    const rows = await database.query<{ allocated_from: string }>(
      'select host(allocated_from) as allocated_from from public.device_ports where device_uuid = $1',
      [uuidOf(9)],
    );
    expect(rows).toEqual([{ allocated_from: '127.0.0.1' }]);
    // The farm host itself allocates it again (a tool server restarting) and keeps its port.
    expect(await allocate(uuidOf(9))).toBe(port);
  });
});

describe('address attribution', () => {
  it('never picks a farm device: the farm host address is shared by every farm device', async () => {
    await markFarmDevice(uuidOf(5), 'farm');
    await allocate(uuidOf(5), '127.0.0.5');
    await send({
      port: daemon.port,
      path: `http://127.0.0.1:${origins.httpPort}/farm/host-address`,
      localAddress: '127.0.0.5',
    });
    const entry = await database.entryWhere('path', '/farm/host-address');
    expect(entry.device_uuid).toBeNull();
    expect(entry.payload.attribution).toEqual({ rule: 'proxy', device_uuid: null });
  });

  it('still finds the one ordinary device of an address a farm device shares, after a refresh too', async () => {
    await allocate(uuidOf(6), '127.0.0.6');
    await markFarmDevice(uuidOf(7), 'cdp');
    await allocate(uuidOf(7), '127.0.0.6');
    const other = await startDaemon('127.0.0.2');
    try {
      for (const [listener, host, path] of [
        [daemon.port, '127.0.0.1', '/farm/shared-address'],
        [other.port, '127.0.0.2', '/farm/shared-address-refreshed'],
      ] as const) {
        await send({
          host,
          port: listener,
          path: `http://127.0.0.1:${origins.httpPort}${path}`,
          localAddress: '127.0.0.6',
        });
        const entry = await database.entryWhere('path', path);
        expect(entry.payload, path).toMatchObject({
          attribution: { rule: 'ip', device_uuid: uuidOf(6) },
          source: 'manual',
        });
      }
    } finally {
      await other.stop();
    }
  });
});
