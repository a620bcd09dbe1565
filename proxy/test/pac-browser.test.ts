// The PAC URL end to end in a real browser (002 §4.4): headless Chromium started with
// --proxy-pac-url=http://<port>.proxy.localhost:<management>/proxy.pac loads a local page, which
// must then be found in `entries` under the device that owns the port. Chromium sends loopback
// names and addresses direct whatever the PAC says, so the page is addressed as 0.0.0.0 (which
// Linux connects to locally); the proxy may reach only local destinations, so the browser's own
// background requests never leave the machine.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePortRange } from '../../packages/stack/src/ports.ts';
import {
  type CaptureWriter,
  loadOrCreateCertificateAuthority,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { basicAuthorization, createUser, issueBundle } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const DOMAIN = 'proxy.localhost';
const OWNER = 'ad000000-0000-4000-8000-00000000c001';
const DEVICE = 'de000000-0000-4000-8000-00000000c0de';

let database: CaptureDatabase;
let pool: pg.Pool;
let caDir: string;
let origins: Origins;
let writer: CaptureWriter;
let proxy: RunningProxy;
let browser: Browser | undefined;
let devicePort: number;

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => undefined);
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  origins = await startOrigins(['127.0.0.1']);
  writer = database.writer();
  proxy = await startProxy({
    port: 0,
    managementPort: 0,
    writer,
    allowlist: ['127.0.0.0/8'],
    destinations: ['127.0.0.0/8', '0.0.0.0/32', 'localhost', '*.localhost'],
    ca: loadOrCreateCertificateAuthority(caDir),
    devices: { pool, proxyDomain: DOMAIN, portRange: await findFreePortRange(5) },
    logger,
  });
  await createUser(pool, OWNER, 'browser@proxy.test');
  const bundle = await issueBundle(pool, OWNER);
  devicePort = await new Promise<number>((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port: proxy.managementPort,
        path: '/allocate',
        method: 'POST',
        headers: { authorization: basicAuthorization(bundle), 'content-type': 'application/json' },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on('end', () => resolve(JSON.parse(body).port));
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify({ uuid: DEVICE, deviceName: 'Headless Chromium', country: 'NL' }));
  });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      `--proxy-pac-url=http://${devicePort}.${DOMAIN}:${proxy.managementPort}/proxy.pac`,
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await proxy?.stop();
  await writer?.stop();
  await pool?.end();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe('a browser configured with the device PAC URL', () => {
  it('loads a page through the device port, captured under that device', async () => {
    const page = await (browser as Browser).newPage();
    const response = await page.goto(`http://0.0.0.0:${origins.httpPort}/pac/page?from=chromium`);
    expect(response?.status()).toBe(200);
    expect(await response?.json()).toMatchObject({ url: '/pac/page?from=chromium' });
    await page.close();

    const entry = await database.entryWhere('path', '/pac/page');
    expect(entry.device_uuid).toBe(DEVICE);
    expect(entry.payload).toMatchObject({
      attribution: { rule: 'port', device_uuid: DEVICE },
      source: 'pac',
      listenerPort: devicePort,
      statusCode: 200,
    });
    const userAgent = (entry.payload.requestHeaders as Array<[string, string]>).find(
      ([name]) => name.toLowerCase() === 'user-agent',
    );
    expect(userAgent?.[1]).toMatch(/Chrome/);
  });

  it('refuses destinations outside the allowed ones, so nothing leaves the machine', async () => {
    const status = (options: http.RequestOptions) =>
      new Promise<number>((resolve, reject) => {
        const request = http.request({ host: '127.0.0.1', port: devicePort, ...options });
        request.on('response', (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        request.on('connect', (response, socket) => {
          socket.destroy();
          resolve(response.statusCode ?? 0);
        });
        request.on('error', reject);
        request.end();
      });
    expect(await status({ path: 'http://update.example.com/check' })).toBe(403);
    expect(await status({ method: 'CONNECT', path: 'update.example.com:443' })).toBe(403);
    expect(await status({ method: 'CONNECT', path: '10.0.0.1:443' })).toBe(403);
    // Chromium's own background requests were refused the same way: none was forwarded.
    const outside = await database.query<{ host: string }>(
      `select distinct host from public.entries where host not in ('0.0.0.0', '127.0.0.1', 'localhost')`,
    );
    expect(outside).toEqual([]);
  });
});
