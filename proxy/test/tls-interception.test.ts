// TLS through the proxy, with real clients (curl, undici, ws) and loopback HTTPS origins whose
// certificates come from their own CA: interception with leaves signed by the project CA
// (HTTP/1.1 and HTTP/2 by ALPN), the leaf cache, a configured passthrough host, a host learned
// after a client refused our certificate, WebSocket through an intercepted tunnel,
// Expect: 100-continue, and a 100 MB download with bounded memory.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import pino from 'pino';
import { ProxyAgent, request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { until } from '../../packages/stack/test/helpers/until.ts';
import {
  type CaptureWriter,
  type CertificateAuthority,
  loadOrCreateCertificateAuthority,
  type RunningProxy,
  startProxy,
} from '../src/index.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { curl } from './helpers/curl.ts';
import { LOOPBACK_DESTINATIONS, type Origins, startOrigins } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const PINNED = '127.0.0.2';
const LEARNED = '127.0.0.3';

let database: CaptureDatabase;
let caDir: string;
let ca: CertificateAuthority;
let origins: Origins;
let writer: CaptureWriter;
let proxy: RunningProxy;
let proxyUrl: string;
let caFile: string;
let originCaFile: string;

async function health(): Promise<{
  certificates: { issued: number };
  passthroughLearned: number;
}> {
  const result = await curl([`${proxyUrl}/health`]);
  return JSON.parse(result.stdout);
}

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  caDir = mkdtempSync(join(tmpdir(), 'proxy-ca-'));
  ca = loadOrCreateCertificateAuthority(caDir);
  origins = await startOrigins(['127.0.0.1', PINNED, LEARNED]);
  caFile = join(caDir, 'ca.pem');
  originCaFile = join(caDir, 'origin-ca.pem');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(originCaFile, origins.originCa.certPem);
  writer = database.writer();
  proxy = await startProxy({
    port: 0,
    writer,
    allowlist: ['127.0.0.0/8', '::1/128'],
    destinations: LOOPBACK_DESTINATIONS,
    ca,
    passthroughHosts: [PINNED],
    upstreamCa: [origins.originCa.certPem],
    bodyCap: 64 * 1024,
    logger,
  });
  proxyUrl = `http://127.0.0.1:${proxy.port}`;
});

afterAll(async () => {
  await proxy?.stop();
  await writer?.stop();
  await origins?.stop();
  await database?.stop();
  rmSync(caDir, { recursive: true, force: true });
});

describe('intercepted HTTPS', () => {
  it('serves curl a leaf signed by the project CA and captures the decrypted exchange', async () => {
    const result = await curl([
      '-x',
      proxyUrl,
      '--cacert',
      caFile,
      '--http1.1',
      '-H',
      'X-First: 1',
      `https://localhost:${origins.httpsPort}/tls/curl?q=1`,
    ]);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toMatchObject({ url: '/tls/curl?q=1', httpVersion: '1.1' });
    const entry = await database.entryWhere('path', '/tls/curl');
    expect(entry.kind).toBe('http');
    expect(entry.url).toBe(`https://localhost:${origins.httpsPort}/tls/curl?q=1`);
    expect(entry.payload).toMatchObject({
      scheme: 'https',
      statusCode: 200,
      tls: { intercepted: true, sni: 'localhost', alpn: 'http/1.1' },
      upstreamTls: { authorized: true },
      source: 'manual',
      attribution: { rule: 'proxy', device_uuid: null },
    });
    expect((entry.payload.tls as { version: string }).version).toMatch(/^TLSv1\.[23]$/);
    expect(entry.payload.requestHeaders).toContainEqual(['X-First', '1']);
    expect(entry.payload.responseBody).toMatchObject({ truncated: false });
  });

  it('keeps the connection alive for undici and captures every request', async () => {
    const agent = new ProxyAgent({ uri: proxyUrl, requestTls: { ca: ca.certPem } });
    try {
      for (let index = 0; index < 20; index += 1) {
        const response = await undiciRequest(
          `https://localhost:${origins.httpsPort}/tls/undici/${index}`,
          { dispatcher: agent, method: 'POST', body: `payload ${index}` },
        );
        expect(response.statusCode).toBe(200);
        expect(JSON.parse(await response.body.text())).toMatchObject({ body: `payload ${index}` });
      }
    } finally {
      await agent.close();
    }
    const rows = await until(async () => {
      const found = await database.query<{ count: string; tunnels: string }>(
        `select count(*) as count,
                count(distinct payload -> 'client' ->> 'port') as tunnels
         from public.entries where path like '/tls/undici/%'`,
      );
      return Number(found[0]?.count) === 20 ? found[0] : undefined;
    });
    expect(Number(rows?.tunnels)).toBe(1); // one tunnel, one TLS session, twenty requests
  });

  it('speaks HTTP/2 to a client that offers h2 by ALPN', async () => {
    const result = await curl([
      '-x',
      proxyUrl,
      '--cacert',
      caFile,
      '--http2',
      '-w',
      '\n%{http_version}',
      `https://localhost:${origins.httpsPort}/tls/h2`,
    ]);
    const [body, version] = result.stdout.split('\n');
    expect(version).toBe('2');
    expect(JSON.parse(body as string)).toMatchObject({ url: '/tls/h2', httpVersion: '1.1' });
    const entry = await database.entryWhere('path', '/tls/h2');
    expect(entry.payload).toMatchObject({
      httpVersion: 'HTTP/2.0',
      statusCode: 200,
      tls: { alpn: 'h2', intercepted: true },
    });
  });

  it('signs one leaf per host, once, however many clients arrive together', async () => {
    const before = (await health()).certificates.issued;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        curl([
          '-x',
          proxyUrl,
          '--cacert',
          caFile,
          `https://127.0.0.1:${origins.httpsPort}/tls/burst/${index}`,
          '--resolve',
          `127.0.0.1:${origins.httpsPort}:127.0.0.1`,
        ]),
      ),
    );
    // 127.0.0.1 is served the origin's "localhost" certificate, so the proxy's upstream check
    // fails: what matters here is the client side, where all eight got our leaf for the IP.
    for (const result of results) expect(result.stderr).not.toMatch(/SSL certificate problem/);
    const after = (await health()).certificates.issued;
    expect(after - before).toBe(1);
  });

  it('relays WebSocket frames through an intercepted tunnel and captures the handshake', async () => {
    const tunnel = await new Promise<import('node:net').Socket>((resolve, reject) => {
      const connect = http.request({
        host: '127.0.0.1',
        port: proxy.port,
        method: 'CONNECT',
        path: `localhost:${origins.httpsPort}`,
      });
      connect.on('connect', (_response, socket) => resolve(socket));
      connect.on('error', reject);
      connect.end();
    });
    const socket = new WebSocket(`wss://localhost:${origins.httpsPort}/ws?room=1`, {
      createConnection: () =>
        tls.connect({ socket: tunnel, servername: 'localhost', ca: ca.certPem }),
    } as WebSocket.ClientOptions);
    const echoed: string[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('open', () => {
        socket.send('hello through the proxy');
        socket.send(Buffer.from([1, 2, 3]));
      });
      socket.on('message', (data) => {
        echoed.push(data.toString('hex'));
        if (echoed.length === 2) resolve();
      });
      socket.on('error', reject);
    });
    socket.close(1000, 'done');
    expect(echoed[0]).toBe(Buffer.from('hello through the proxy').toString('hex'));
    const entry = await database.entryWhere('path', '/ws');
    expect(entry.kind).toBe('websocket');
    expect(entry.payload).toMatchObject({
      scheme: 'wss',
      statusCode: 101,
      tls: { intercepted: true },
    });
    expect(entry.payload.requestHeaders).toContainEqual(['Upgrade', 'websocket']);
    // When the socket closes, a second row records the messages both ways.
    const closed = await until(async () => {
      const rows = await database.query<{ payload: Record<string, unknown> }>(
        `select payload from public.entries where path = '/ws' and payload ->> 'phase' = 'closed'`,
      );
      return rows[0];
    });
    const messages = closed?.payload.messages as Array<Record<string, unknown>>;
    expect(messages.filter((message) => message.direction === 'send')).toEqual([
      expect.objectContaining({ opcode: 1, text: 'hello through the proxy' }),
      expect.objectContaining({ opcode: 2, base64: 'AQID' }),
      expect.objectContaining({ opcode: 8, size: 6 }), // close: code 1000 and "done"
    ]);
    expect(messages.filter((message) => message.direction === 'receive')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ opcode: 1, text: 'hello through the proxy' }),
      ]),
    );
    expect(closed?.payload).toMatchObject({ messagesComplete: true, statusCode: 101 });
  });
});

describe('passthrough', () => {
  it('passes a configured pinned host through untouched and records the tunnel', async () => {
    const result = await curl([
      '-x',
      proxyUrl,
      '--cacert',
      originCaFile, // the origin's own certificate, as a pinning client expects
      `https://${PINNED}:${origins.httpsPort}/pinned`,
    ]);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toMatchObject({ url: '/pinned' });
    const entry = await database.entryWhere('host', PINNED);
    expect(entry.kind).toBe('tunnel');
    expect(entry.payload).toMatchObject({
      method: 'CONNECT',
      tls: { intercepted: false, passthrough: { reason: 'configured' } },
    });
  });

  it('passes a host through after a client refused our certificate for it', async () => {
    const url = `https://${LEARNED}:${origins.httpsPort}/learned`;
    const refused = await curl(['-x', proxyUrl, url]);
    expect(refused.code).toBe(60); // curl: our leaf's issuer is not trusted
    expect(origins.hits.get('/learned')).toBeUndefined();
    const failure = await until(async () => {
      const rows = await database.query<{ payload: Record<string, unknown> }>(
        `select payload from public.entries where host = $1 and kind = 'error'`,
        [LEARNED],
      );
      return rows[0];
    });
    expect(failure?.payload.tls).toMatchObject({ intercepted: false });
    expect(String(failure?.payload.error)).toMatch(/handshake with the client failed/);
    expect((await health()).passthroughLearned).toBeGreaterThan(0);

    const passed = await curl(['-x', proxyUrl, '--cacert', originCaFile, url]);
    expect(passed.stderr).toBe('');
    expect(JSON.parse(passed.stdout)).toMatchObject({ url: '/learned' });
    const tunnel = await until(async () => {
      const rows = await database.query<{ payload: Record<string, unknown> }>(
        `select payload from public.entries where host = $1 and kind = 'tunnel'`,
        [LEARNED],
      );
      return rows[0];
    });
    expect(tunnel?.payload.tls).toMatchObject({ passthrough: { reason: 'handshake_failed' } });
    // Only that client: another client address is still intercepted.
    const other = await curl(['-x', proxyUrl, '--interface', '127.0.0.5', '--cacert', caFile, url]);
    expect(JSON.parse(other.stdout)).toMatchObject({ url: '/learned' });
    const intercepted = await until(async () => {
      const rows = await database.query<{ payload: Record<string, unknown> }>(
        `select payload from public.entries where host = $1 and kind = 'http'`,
        [LEARNED],
      );
      return rows[0];
    });
    expect(intercepted?.payload).toMatchObject({
      client: { ip: '127.0.0.5' },
      tls: { intercepted: true },
    });
  });
});

describe('request and body handling', () => {
  it('relays Expect: 100-continue from the origin and forwards the body', async () => {
    const body = 'x'.repeat(4096);
    for (const url of [
      `http://127.0.0.1:${origins.httpPort}/expect/plain`,
      `https://localhost:${origins.httpsPort}/expect/tls`,
    ]) {
      const result = await curl([
        '-x',
        proxyUrl,
        '--cacert',
        caFile,
        '--http1.1',
        '-v',
        '-H',
        'Expect: 100-continue',
        '--data-binary',
        body,
        url,
      ]);
      expect(result.stderr).toMatch(/< HTTP\/1\.1 100 Continue/);
      expect(JSON.parse(result.stdout)).toMatchObject({ method: 'POST', body });
    }
    const entry = await database.entryWhere('path', '/expect/tls');
    expect(entry.payload.requestHeaders).toContainEqual(['Expect', '100-continue']);
    expect(entry.payload.requestBody).toMatchObject({ size: 4096, truncated: false });
  });

  it('streams 100 MB through an intercepted tunnel with bounded memory', async () => {
    const size = 100 * 1024 * 1024;
    // The origin is fast and the client slow: a proxy that ignored backpressure would hold most
    // of the body in buffers while the client catches up.
    const collect = (globalThis as { gc?: () => void }).gc;
    if (!collect) throw new Error('run with --expose-gc (vitest.config.ts sets it)');
    collect();
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = 0;
    // Each sample is a full collection, which pauses the in-process proxy too: a few a second
    // keep the stream moving on a busy machine.
    const sampler = setInterval(() => {
      collect();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 250);
    const result = await curl([
      '-x',
      proxyUrl,
      '--cacert',
      caFile,
      '--limit-rate',
      '40M',
      '--max-time',
      '300',
      '-o',
      '/dev/null',
      '-w',
      '%{size_download}',
      `https://localhost:${origins.httpsPort}/big/${size}`,
    ]);
    clearInterval(sampler);
    expect(result.stdout).toBe(String(size));
    // In flight at full speed: socket buffers and stream high-water marks on both legs, measured
    // up to ~24 MB; a proxy ignoring backpressure holds most of the 100 MB.
    expect(peak - baseline).toBeLessThan(40 * 1024 * 1024);
    const entry = await database.entryWhere('path', `/big/${size}`);
    expect(entry.payload.responseBody).toMatchObject({ size, truncated: true });
  }, 330_000);
});
