// Attacks on the proxy, each tried as an attacker would, against a real Postgres and
// loopback origins only: another client sending traffic on someone's device port (by port and by
// SNI, over plain requests and CONNECT), SSRF to our own services in every address spelling,
// one account draining the port pool, PAC answers telling allocated ports apart, and guessing at
// /allocate without limit. Every refusal must leave the origin untouched and capture nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange } from '../../packages/stack/src/ports.ts';
import { DestinationPolicy, DestinationRefused } from '../src/destination-policy.ts';
import {
  type CaptureWriter,
  type CertificateAuthority,
  loadOrCreateCertificateAuthority,
  pacBody,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { addressOf, isSpecialAddress, legacyIPv4 } from '../src/special-addresses.ts';
import { type Bundle, basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const DOMAIN = 'proxy.test';
const OWNER_A = 'ad000000-0000-4000-8000-0000000021a1';
const OWNER_B = 'ad000000-0000-4000-8000-0000000021b1';
const OWNER_C = 'ad000000-0000-4000-8000-0000000021c1';
const uuidOf = (n: number) => `de000000-0000-4000-8000-0000000021${String(n).padStart(2, '0')}`;

let database: CaptureDatabase;
let pool: pg.Pool;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let range: { start: number; end: number };
let bundleA: Bundle;
let bundleB: Bundle;
let bundleC: Bundle;
/** Loopback opted in, as the local stack's tests do; a small per-account cap and failure limit. */
let local: RunningProxy;
/** The defaults: no PROXY_DESTINATIONS. */
let defaults: RunningProxy;

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(options: {
  port: number;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  localAddress?: string;
}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
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
    // A CONNECT answer (any status) ends here.
    request.on('connect', (response, socket) => {
      socket.destroy();
      resolve({ status: response.statusCode ?? 0, headers: response.headers, body: '' });
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

function allocate(
  daemon: RunningProxy,
  uuid: string,
  bundle: Bundle | null,
  localAddress = '127.0.0.1',
): Promise<Reply> {
  return send({
    port: daemon.managementPort as number,
    path: '/allocate',
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(bundle ? { authorization: basicAuthorization(bundle) } : {}),
    },
    body: JSON.stringify({ uuid, deviceName: `device ${uuid.slice(-4)}` }),
    localAddress,
  });
}

const proxyAuthorization = (bundle: Bundle) => ({
  'proxy-authorization': basicAuthorization(bundle),
});

async function entriesAt(path: string): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 200)); // past the writer's 50 ms flush
  const rows = await database.query<{ n: number }>(
    'select count(*)::int as n from public.entries where path = $1',
    [path],
  );
  return rows[0]?.n ?? 0;
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => undefined);
  await createUser(pool, OWNER_A, 'a@attacks.test');
  await createUser(pool, OWNER_B, 'b@attacks.test');
  await createUser(pool, OWNER_C, 'c@attacks.test');
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1']);
  range = await findFreePortRange(20, ['127.0.0.1']);
  writer = database.writer();
  local = await startProxy({
    port: 0,
    managementPort: 0,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    devices: {
      pool,
      proxyDomain: DOMAIN,
      portRange: range,
      portsPerAccount: 3,
      allocateFailuresPerMinute: 5,
    },
    logger,
  });
  defaults = await startProxy({ port: 0, writer, allowlist: ['127.0.0.0/8'], ca, logger });
  bundleA = await issueBundle(pool, OWNER_A);
  bundleB = await issueBundle(pool, OWNER_B);
  bundleC = await issueBundle(pool, OWNER_C);
});

afterAll(async () => {
  await local?.stop();
  await defaults?.stop();
  await writer?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe("another client on a device's port", () => {
  let port: number;
  beforeAll(async () => {
    // Device 1 of account A, allocated from 127.0.0.1 (as the farm does).
    const reply = await allocate(local, uuidOf(1), bundleA);
    expect(reply.status, reply.body).toBe(200);
    port = JSON.parse(reply.body).port;
  });

  it('is refused 407 without credentials, by request and by CONNECT, and nothing is captured', async () => {
    const hits = origins.hits.get('/impersonated') ?? 0;
    const plain = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/impersonated`,
      localAddress: '127.0.0.2',
    });
    expect(plain.status).toBe(407);
    expect(plain.headers['proxy-authenticate']).toMatch(/^Basic realm="capture-proxy"/);
    const tunnel = await send({
      port,
      method: 'CONNECT',
      path: `127.0.0.1:${origins.httpsPort}`,
      localAddress: '127.0.0.2',
    });
    expect(tunnel.status).toBe(407);
    expect(tunnel.headers['proxy-authenticate']).toMatch(/^Basic /);
    const wrong = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/impersonated`,
      headers: { 'proxy-authorization': basicAuthorization({ ...bundleA, password: 'guess' }) },
      localAddress: '127.0.0.2',
    });
    expect(wrong.status).toBe(407);
    expect(origins.hits.get('/impersonated') ?? 0).toBe(hits);
    expect(await entriesAt('/impersonated')).toBe(0);
  });

  it("is refused 403 with another account's bundle, and nothing is captured", async () => {
    const reply = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/other-account`,
      headers: proxyAuthorization(bundleB),
      localAddress: '127.0.0.2',
    });
    expect(reply.status).toBe(403);
    expect(origins.hits.get('/other-account')).toBeUndefined();
    expect(await entriesAt('/other-account')).toBe(0);
  });

  it('is refused on the shared port when it names the device port in its SNI', async () => {
    const proxyName = `${port}.${DOMAIN}`;
    const result = await curl([
      '--proxy',
      `https://${proxyName}:${local.port}`,
      '--proxy-cacert',
      join(caDir, 'ca.pem'),
      '--resolve',
      `${proxyName}:${local.port}:127.0.0.1`,
      '--interface',
      '127.0.0.9',
      '--write-out',
      '%{http_code}',
      '--output',
      '/dev/null',
      `http://127.0.0.1:${origins.httpPort}/sni-impersonated`,
    ]);
    expect(result.stdout).toBe('407');
    expect(await entriesAt('/sni-impersonated')).toBe(0);
  });

  it("is let through from the allocating address, or with the owner's bundle from anywhere", async () => {
    const fromDevice = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/own-address`,
    });
    expect(fromDevice.status).toBe(200);
    const withBundle = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/own-bundle`,
      headers: proxyAuthorization(bundleA),
      localAddress: '127.0.0.2',
    });
    expect(withBundle.status).toBe(200);
    const entry = await database.entryWhere('path', '/own-bundle');
    expect(entry.device_uuid).toBe(uuidOf(1));
    // The bundle secret is not kept in the capture.
    expect(JSON.stringify(entry.payload)).not.toContain(bundleA.password);
    expect(JSON.stringify(entry.payload)).toContain('Basic [redacted]');
  });

  it('follows the device when it allocates again from a new address', async () => {
    expect((await allocate(local, uuidOf(1), bundleA, '127.0.0.3')).status).toBe(200);
    const moved = await send({
      port,
      path: `http://127.0.0.1:${origins.httpPort}/moved`,
      localAddress: '127.0.0.3',
    });
    expect(moved.status).toBe(200);
    const old = await send({ port, path: `http://127.0.0.1:${origins.httpPort}/moved` });
    expect(old.status).toBe(407);
    expect((await allocate(local, uuidOf(1), bundleA)).status).toBe(200); // back for the rest
  });
});

describe('SSRF through the proxy', () => {
  // Every spelling of the loopback origin, of metadata and of private addresses.
  const spellings = (port: number) => [
    `127.0.0.1:${port}`,
    `2130706433:${port}`, // decimal integer
    `0x7f000001:${port}`, // hex integer
    `0177.0.0.1:${port}`, // octal dotted
    `0x7f.0.0.1:${port}`, // hex dotted
    `127.1:${port}`, // short form
    `[::ffff:127.0.0.1]:${port}`, // IPv4-mapped IPv6
    `[::ffff:7f00:1]:${port}`, // IPv4-mapped IPv6, hex
    `[0:0:0:0:0:ffff:7f00:1]:${port}`,
    `[::1]:${port}`,
    `localhost:${port}`, // a DNS name resolving to loopback
    `LocalHost:${port}`,
    '169.254.169.254:80', // cloud metadata
    '[fd00:ec2::254]:80', // its IPv6 form
    '[::ffff:169.254.169.254]:80',
    '10.0.0.1:80',
    '192.168.1.1:80',
    '[fe80::1]:80',
    '0.0.0.0:80',
  ];

  it('refuses every spelling of loopback, private, link-local and metadata with 403', async () => {
    const before = origins.hits.size;
    for (const authority of spellings(origins.httpPort)) {
      const plain = await send({ port: defaults.port, path: `http://${authority}/ssrf` });
      expect(plain.status, `GET http://${authority}/`).toBe(403);
      const tunnel = await send({ port: defaults.port, method: 'CONNECT', path: authority });
      expect(tunnel.status, `CONNECT ${authority}`).toBe(403);
    }
    expect(origins.hits.size).toBe(before);
    expect(origins.hits.get('/ssrf')).toBeUndefined();
    expect(await entriesAt('/ssrf')).toBe(0);
  });

  it('refuses a WebSocket upgrade to loopback too', async () => {
    const reply = await send({
      port: defaults.port,
      path: `http://localhost:${origins.httpPort}/ws`,
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13' },
    });
    expect(reply.status).toBe(403);
  });

  it('reaches loopback only where the operator opted in (PROXY_DESTINATIONS)', async () => {
    for (const authority of [`127.0.0.1:${origins.httpPort}`, `localhost:${origins.httpPort}`]) {
      const reply = await send({ port: local.port, path: `http://${authority}/opted-in` });
      expect(reply.status, authority).toBe(200);
    }
    // Opting in loopback does not open the private network or metadata.
    for (const authority of ['169.254.169.254:80', '10.0.0.1:80', '[fd00:ec2::254]:80']) {
      const reply = await send({ port: local.port, path: `http://${authority}/opted-in` });
      expect(reply.status, authority).toBe(403);
    }
  });

  it('classifies every spelling by the address it names', () => {
    expect(legacyIPv4('2130706433')).toBe('127.0.0.1');
    expect(legacyIPv4('0x7f.1')).toBe('127.0.0.1');
    expect(legacyIPv4('017700000001')).toBe('127.0.0.1');
    expect(legacyIPv4('10.1')).toBe('10.0.0.1');
    expect(legacyIPv4('256.1.1.1')).toBeNull();
    expect(legacyIPv4('example.com')).toBeNull();
    expect(addressOf('[::ffff:7f00:1]')).toBe('127.0.0.1');
    expect(addressOf('[::FFFF:169.254.169.254]')).toBe('169.254.169.254');
    for (const special of ['127.0.0.1', '::1', '169.254.169.254', 'fd00:ec2::254', '::7f00:1']) {
      expect(isSpecialAddress(special), special).toBe(true);
    }
    for (const open of [
      '93.184.215.14',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      '::ffff:8.8.8.8',
    ]) {
      expect(isSpecialAddress(open), open).toBe(false);
    }
  });

  it('refuses at connect time a name whose resolution is refused (the lookup every connect uses)', async () => {
    const policy = new DestinationPolicy(undefined);
    const error = await new Promise<Error | null>((resolve) =>
      policy.lookup('localhost', { all: true }, (failure) => resolve(failure)),
    );
    expect(error).toBeInstanceOf(DestinationRefused);
    // Opted in by CIDR, the same name resolves and is handed over as resolved.
    const opted = new DestinationPolicy(['public', '127.0.0.0/8', '::1/128']);
    const addresses = await new Promise<unknown>((resolve, reject) =>
      opted.lookup('localhost', { all: true }, (failure, result) =>
        failure ? reject(failure) : resolve(result),
      ),
    );
    expect(addresses).toEqual(
      expect.arrayContaining([expect.objectContaining({ address: '127.0.0.1' })]),
    );
  });
});

describe('the device port pool', () => {
  it('caps the ports of one account, counted atomically, while others still get ports', async () => {
    // Account C holds no port yet; the cap is 3. Eight concurrent calls for eight devices, each
    // from its own address (a call takes a place in its address's failure count until answered).
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        allocate(local, uuidOf(40 + index), bundleC, `127.0.1.${10 + index}`),
      ),
    );
    const granted = replies.filter((reply) => reply.status === 200);
    const refused = replies.filter((reply) => reply.status === 403);
    expect(granted).toHaveLength(3);
    expect(refused).toHaveLength(5);
    for (const reply of refused) {
      expect(JSON.parse(reply.body)).toMatchObject({ error: 'quota_exceeded' });
    }
    const held = await database.query<{ n: number }>(
      `select count(*)::int as n from public.device_ports p join public.devices d on d.uuid = p.device_uuid
       where d.owner_user_id = $1`,
      [OWNER_C],
    );
    expect(held[0]?.n).toBe(3);
    // A device already holding a port keeps getting it.
    const again = await allocate(local, JSON.parse(granted[0]?.body ?? '{}').uuid, bundleC);
    expect(again.status).toBe(200);
    expect((await allocate(local, uuidOf(60), bundleB)).status).toBe(200);
  });
});

describe('PAC answers', () => {
  it('are identical for a free and an allocated port', async () => {
    const allocated = JSON.parse((await allocate(local, uuidOf(70), bundleB)).body).port as number;
    const used = new Set(
      (await database.query<{ port: number }>('select port from public.device_ports')).map(
        (row) => row.port,
      ),
    );
    const free = [...Array(range.end - range.start + 1).keys()]
      .map((offset) => range.start + offset)
      .find((candidate) => !used.has(candidate)) as number;
    const pac = (port: number) =>
      send({
        port: local.managementPort as number,
        path: '/wpad.dat',
        headers: { host: `${port}.${DOMAIN}` },
      });
    const [a, b] = await Promise.all([pac(allocated), pac(free)]);
    const strip = ({ date: _date, ...rest }: http.IncomingHttpHeaders) => rest;
    expect(b.status).toBe(a.status);
    expect(strip(b.headers)).toEqual(strip(a.headers));
    expect(a.body).toBe(pacBody(DOMAIN, allocated));
    expect(b.body).toBe(pacBody(DOMAIN, free));
  });
});

describe('POST /allocate failures', () => {
  it('are limited per address: 429 with Retry-After past the limit, other addresses unaffected', async () => {
    // The windows are calendar minutes: start early in one so all calls share it.
    const second = new Date().getSeconds();
    if (second > 45) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const reply = await allocate(
        local,
        uuidOf(80),
        { ...bundleA, password: `guess-${attempt}` },
        '127.0.0.5',
      );
      expect(reply.status, `attempt ${attempt}`).toBe(401);
    }
    const blocked = await allocate(
      local,
      uuidOf(80),
      { ...bundleA, password: 'guess-6' },
      '127.0.0.5',
    );
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(blocked.body)).toMatchObject({ error: 'rate_limited' });
    // Even the right credentials wait: the limit is checked before them.
    expect((await allocate(local, uuidOf(80), bundleA, '127.0.0.5')).status).toBe(429);
    expect((await allocate(local, uuidOf(80), bundleA, '127.0.0.6')).status).toBe(200);
  }, 30_000);

  it('are counted before they are answered: twenty sent together get no more than the limit', async () => {
    const second = new Date().getSeconds();
    if (second > 45) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
    // A check-then-record count let all twenty past the check while none had been recorded.
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, attempt) =>
        allocate(local, uuidOf(80), { ...bundleA, password: `together-${attempt}` }, '127.0.0.7'),
      ),
    );
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
  }, 30_000);

  it('do not count calls that succeed', async () => {
    const second = new Date().getSeconds();
    if (second > 45) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
    for (let call = 1; call <= 8; call += 1) {
      expect((await allocate(local, uuidOf(80), bundleA, '127.0.0.8')).status, `call ${call}`).toBe(
        200,
      );
    }
    expect(
      (await allocate(local, uuidOf(80), { ...bundleA, password: 'wrong' }, '127.0.0.8')).status,
    ).toBe(401);
  }, 30_000);
});
