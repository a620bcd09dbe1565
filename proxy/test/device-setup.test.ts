// Setting a device up (docs/devices.md) against a real Postgres and real sockets, with loopback
// aliases standing in for the LAN: the proxy binds 127.0.0.1 and its "LAN address" 127.0.0.3, the
// phone is 127.0.0.4 and a stranger on the same network 127.0.0.5. Ports for devices made by SQL
// before the pool existed, PAC files by IP naming the address the client reached, the set-up link
// that binds the device's port to the phone (and nothing else does), the live check over
// Server-Sent Events (first request, its kind, a refused CA), the fixed host capture.invalid
// through the proxy, and the pages' security headers.
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
import type { SetupStatus } from '../src/setup/setup-page.ts';
import { createUser } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';
import { watchSetupStatus } from './helpers/through-proxy.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const OWNER = 'ad000000-0000-4000-8000-00000000c001';
const DEVICE = 'de000000-0000-4000-8000-0000000c0001';
const LAN = '127.0.0.3';
const PHONE = '127.0.0.4';
const STRANGER = '127.0.0.5';

let database: CaptureDatabase;
let pool: pg.Pool;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let proxy: RunningProxy;
let devicePort: number;
let token: string;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function get(path: string, from: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: LAN,
        port: proxy.managementPort,
        path,
        headers,
        localAddress: from,
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
  });
}

/** The live check's event stream from the phone, as the set-up page's EventSource reads it. */
function watchStatus(path: string) {
  return watchSetupStatus({ host: LAN, port: proxy.managementPort as number, path, from: PHONE });
}

/** curl from `from` through the device's port. */
function throughDevicePort(from: string, url: string, extra: string[] = []) {
  return curl([
    '--interface',
    from,
    '--proxy',
    `http://${LAN}:${devicePort}`,
    '--output',
    '/dev/null',
    '--write-out',
    '%{http_code}',
    ...extra,
    url,
  ]);
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => undefined);
  await createUser(pool, OWNER, 'setup@proxy.test');
  // A device made by SQL before any proxy registered its pool, as the seed's are.
  await pool.query(
    `insert into public.devices (uuid, name, os, owner_user_id) values ($1, 'Ana''s <phone>', 'android', $2)`,
    [DEVICE, OWNER],
  );
  caDir = mkdtempSync(join(tmpdir(), 'proxy-setup-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1']);
  writer = database.writer();
  proxy = await startProxy({
    port: 0,
    managementPort: 0,
    host: '127.0.0.1',
    lanAddress: LAN,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    upstreamCa: [origins.originCa.certPem],
    devices: {
      pool,
      proxyDomain: 'proxy.test',
      portRange: await findFreePortRange(10, ['127.0.0.1', LAN]),
      refreshIntervalMs: 500,
    },
    logger,
  });
  const [row] = await database.query<{ port: number; token: string }>(
    `select p.port, private.issue_device_setup_link($1) as token
     from public.device_ports p where p.device_uuid = $1`,
    [DEVICE],
  );
  devicePort = (row as { port: number }).port;
  token = (row as { token: string }).token;
}, 120_000);

afterAll(async () => {
  await proxy?.stop();
  await writer?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
});

describe('ports and PAC files by IP', () => {
  it('gave the device made before the pool its port when the proxy registered the pool', () => {
    expect(devicePort).toBeGreaterThan(0);
    expect(proxy.registry?.deviceForPort(devicePort)?.uuid).toBe(DEVICE);
  });

  it('serves every port a PAC file naming the address the client reached', async () => {
    const onLan = await get(`/${devicePort}.pac`, PHONE);
    expect(onLan.status).toBe(200);
    expect(onLan.headers['content-type']).toBe('application/x-ns-proxy-autoconfig');
    expect(onLan.body).toContain(`return "PROXY ${LAN}:${devicePort}; DIRECT";`);
    const free = await get('/65000.pac', PHONE);
    expect(free.status).toBe(200);
    expect(free.body).toContain(`"PROXY ${LAN}:65000; DIRECT"`);
    const local = await new Promise<string>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${proxy.managementPort}/${devicePort}.pac`, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          response.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
    expect(local).toContain(`"PROXY 127.0.0.1:${devicePort}; DIRECT"`);
    expect((await get('/70000.pac', PHONE)).status).toBe(404);
  });
});

describe('the set-up link', () => {
  it('is needed: before it is opened the phone is refused on the device port', async () => {
    const result = await throughDevicePort(PHONE, `http://127.0.0.1:${origins.httpPort}/early`);
    expect(result.stdout).toBe('407');
  });

  it('answers an unknown token 404 and binds nothing', async () => {
    const reply = await get(`/setup/${'x'.repeat(32)}`, STRANGER);
    expect(reply.status).toBe(404);
    expect(reply.body).toContain('Unknown or expired set-up link');
    const [row] = await database.query<{ allocated_from: string | null }>(
      'select host(allocated_from) as allocated_from from public.device_ports where device_uuid = $1',
      [DEVICE],
    );
    expect(row?.allocated_from).toBeNull();
  });

  it("serves the device's page with strict headers and binds the port to the phone", async () => {
    const reply = await get(`/setup/${token}`, PHONE);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-security-policy']).toContain("script-src 'self'");
    expect(reply.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(reply.headers['referrer-policy']).toBe('no-referrer');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.body).toContain('Ana&#39;s &lt;phone&gt;');
    expect(reply.body).not.toContain('<phone>');
    expect(reply.body).toContain(`http://${LAN}:${proxy.managementPort}/${devicePort}.pac`);
    expect(reply.body).toContain(`${LAN}:${devicePort}`);
    expect(reply.body).toContain(`/setup/${token}/status`);
    const [row] = await database.query<{ allocated_from: string; ip: string; source: string }>(
      `select host(p.allocated_from) as allocated_from, host(s.ip) as ip, s.source
       from public.device_ports p join public.device_status s using (device_uuid)
       where p.device_uuid = $1`,
      [DEVICE],
    );
    expect(row).toEqual({ allocated_from: PHONE, ip: PHONE, source: 'pac' });
  });

  it('turns the live check green on the first request and names its kind', async () => {
    const stream = await watchStatus(`/setup/${token}/status`);
    try {
      await until(() => stream.events.length >= 1);
      expect(stream.events[0]?.seen).toBe(false);
      const result = await throughDevicePort(
        PHONE,
        `https://127.0.0.1:${origins.httpsPort}/first`,
        ['--cacert', join(caDir, 'ca.pem')],
      );
      expect(result.stdout).toBe('200');
      await until(() => stream.events.some((event) => event.seen));
      const seen = stream.events.find((event) => event.seen) as SetupStatus;
      expect(seen).toMatchObject({ connection: 'https', listener: 'device-port', caProblem: null });
    } finally {
      stream.close();
    }
  });

  it('names a CA the device does not trust', async () => {
    const stream = await watchStatus(`/setup/${token}/status`);
    try {
      // curl without the project CA refuses our leaf, as a phone without it installed does.
      const result = await throughDevicePort(PHONE, `https://localhost:${origins.httpsPort}/ca`);
      expect(result.code).toBe(60);
      await until(() => stream.events.some((event) => event.caProblem !== null));
      const problem = stream.events.find((event) => event.caProblem)?.caProblem;
      expect(problem?.host).toBe('localhost');
    } finally {
      stream.close();
    }
    const json = await get(`/setup/${token}/status`, STRANGER);
    expect(json.headers['content-type']).toBe('application/json');
    expect((JSON.parse(json.body) as SetupStatus).caProblem?.host).toBe('localhost');
  });

  it('does not let a stranger on the same network use the device port', async () => {
    const result = await throughDevicePort(
      STRANGER,
      `http://127.0.0.1:${origins.httpPort}/stranger`,
    );
    expect(result.stdout).toBe('407');
    expect(origins.hits.get('/stranger')).toBeUndefined();
  });

  it('answers an expired link 404', async () => {
    await database.query(
      `update private.device_setup_links set expires_at = now() - interval '1 second'
       where device_uuid = $1`,
      [DEVICE],
    );
    expect((await get(`/setup/${token}`, PHONE)).status).toBe(404);
    expect((await get(`/setup/${token}/status`, PHONE)).status).toBe(404);
  });
});

describe('the set-up page through the proxy', () => {
  it('answers capture.invalid locally with the page of the device whose port it came through', async () => {
    const result = await curl([
      '--interface',
      PHONE,
      '--proxy',
      `http://${LAN}:${devicePort}`,
      'http://capture.invalid/',
    ]);
    expect(result.stdout).toContain('Ana&#39;s &lt;phone&gt;');
    expect(result.stdout).toContain('data-status-url="/status"');
    const status = await curl([
      '--interface',
      PHONE,
      '--proxy',
      `http://${LAN}:${devicePort}`,
      'http://capture.invalid/status',
    ]);
    expect(JSON.parse(status.stdout)).toMatchObject({ seen: true, listener: 'device-port' });
  });

  it('gives a client of the shared port the page for any device', async () => {
    const result = await curl([
      '--interface',
      STRANGER,
      '--proxy',
      `http://${LAN}:${proxy.port}`,
      'http://capture.invalid/',
    ]);
    expect(result.stdout).toContain('Set up a device');
    expect(result.stdout).not.toContain('Ana&#39;s');
  });

  it('serves the CA as a configuration profile', async () => {
    const reply = await get('/ca.mobileconfig', PHONE);
    expect(reply.headers['content-type']).toBe('application/x-apple-aspen-config');
    expect(reply.body).toContain(ca.certDer.toString('base64').slice(0, 64));
  });
});
