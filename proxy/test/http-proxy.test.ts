// The capture proxy's HTTP slice against a real Postgres with this repo's migrations and loopback
// origins: forwarding with capture, 502 and an error capture for a dead origin, management URLs
// answered locally, the source-IP allowlist, malformed requests, CONNECT passthrough recorded,
// and a Postgres outage during traffic with every capture stored exactly once afterwards.
import { execFile } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import type pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../packages/stack/src/ports.ts';
import { until } from '../../packages/stack/test/helpers/until.ts';
import { type CaptureWriter, type RunningProxy, startProxy } from '../src/index.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';
import { LOOPBACK_DESTINATIONS } from './helpers/origins.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });

let database: CaptureDatabase;
let writer: CaptureWriter;
let proxy: RunningProxy;
let origin: http.Server;
let originPort = 0;
let originHits = 0;

interface Reply {
  status: number;
  body: string;
}

/** A request through the proxy in absolute form, as curl -x sends it. */
function viaProxy(method: string, url: string, body?: string, port = proxy.port): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = http.request(
      { host: '127.0.0.1', port, method, path: url, headers: { host: target.host } },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const query = <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) =>
  database.query<T>(sql, values);
const capturedFor = (path: string) => database.entryWhere('path', path);

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  origin = http.createServer((request, response) => {
    originHits += 1;
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      const json = JSON.stringify({ method: request.method, url: request.url, body });
      const coding = /^\/encoded\/(gzip|br|zstd)/.exec(request.url ?? '')?.[1];
      if (coding) {
        const encode = {
          gzip: zlib.gzipSync,
          br: zlib.brotliCompressSync,
          zstd: zlib.zstdCompressSync,
        }[coding];
        response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': coding });
        response.end(encode?.(Buffer.from(json)));
        return;
      }
      response.writeHead(200, { 'Content-Type': 'application/json', 'X-Origin': 'yes' });
      response.end(json);
    });
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originPort = (origin.address() as AddressInfo).port;
  writer = database.writer();
  proxy = await startProxy({
    port: 0,
    writer,
    allowlist: ['127.0.0.0/8', '::1/128'],
    destinations: LOOPBACK_DESTINATIONS,
    firstByteTimeoutMs: 300,
    logger,
  });
});

afterAll(async () => {
  await proxy?.stop();
  await writer?.stop();
  await new Promise((resolve) => origin?.close(resolve));
  await database?.stop();
});

describe('plain HTTP through the proxy', () => {
  it('forwards a GET and captures the exchange with headers in wire order', async () => {
    const reply = await viaProxy('GET', `http://127.0.0.1:${originPort}/hello?x=1`);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ method: 'GET', url: '/hello?x=1' });
    const row = await capturedFor('/hello');
    expect(row).toMatchObject({
      kind: 'http',
      host: '127.0.0.1',
      url: `http://127.0.0.1:${originPort}/hello?x=1`,
    });
    expect(row.payload).toMatchObject({
      method: 'GET',
      statusCode: 200,
      query: 'x=1',
      source: 'manual',
    });
    expect(row.payload.responseHeaders).toEqual(expect.arrayContaining([['X-Origin', 'yes']]));
    expect((row.payload.responseBody as { text: string }).text).toContain('"url":"/hello?x=1"');
  });

  it('forwards a POST body and captures it', async () => {
    const reply = await viaProxy('POST', `http://127.0.0.1:${originPort}/submit`, 'name=value');
    expect(JSON.parse(reply.body).body).toBe('name=value');
    const row = await capturedFor('/submit');
    expect(row.payload.requestBody).toMatchObject({ size: 10, truncated: false });
  });

  it('works for curl -x', async () => {
    // Asynchronously: the proxy runs in this process and must keep serving while curl waits.
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        'curl',
        [
          '-s',
          '--max-time',
          '10',
          '-x',
          `http://127.0.0.1:${proxy.port}`,
          `http://127.0.0.1:${originPort}/by-curl`,
        ],
        (error, output) => (error ? reject(error) : resolve(output)),
      ),
    );
    expect(JSON.parse(stdout).url).toBe('/by-curl');
    expect((await capturedFor('/by-curl')).kind).toBe('http');
  });

  it('answers 502 with a reason for a dead origin and captures the error', async () => {
    const dead = await findFreePort();
    const reply = await viaProxy('GET', `http://127.0.0.1:${dead}/gone`);
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.body).message).toContain('ECONNREFUSED');
    const row = await capturedFor('/gone');
    expect(row.kind).toBe('error');
    expect(row.payload.error).toContain('ECONNREFUSED');
  });
});

describe('what the proxy answers itself', () => {
  it('answers /health locally, by path or by its own address, and forwards neither', async () => {
    const before = originHits;
    const direct = await new Promise<Reply>((resolve) => {
      http.get({ host: '127.0.0.1', port: proxy.port, path: '/health' }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      });
    });
    expect(direct.status).toBe(200);
    expect(JSON.parse(direct.body)).toMatchObject({ status: 'ok', captures: { databaseUp: true } });
    const absolute = await viaProxy('GET', `http://127.0.0.1:${proxy.port}/health`);
    expect(JSON.parse(absolute.body).status).toBe('ok');
    expect(originHits).toBe(before);
  });

  it('refuses clients outside the allowlist with 403 and sends nothing upstream', async () => {
    const closed = await startProxy({ port: 0, writer, allowlist: ['10.0.0.0/8'], logger });
    try {
      const before = originHits;
      const reply = await viaProxy(
        'GET',
        `http://127.0.0.1:${originPort}/blocked`,
        undefined,
        closed.port,
      );
      expect(reply.status).toBe(403);
      expect(originHits).toBe(before);
    } finally {
      await closed.stop();
    }
  });

  it('answers a malformed request with 400 and keeps serving others', async () => {
    const raw = await new Promise<string>((resolve) => {
      const socket = net.connect(proxy.port, '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('close', () => resolve(text));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect((await viaProxy('GET', `http://127.0.0.1:${originPort}/after-garbage`)).status).toBe(
      200,
    );
  });
});

describe('silent clients', () => {
  const closedWithin = (socket: net.Socket, ms: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
      socket.on('error', () => undefined);
      socket.resume(); // read (and drop) what arrives, so the end of the stream is seen
    });

  it('closes a connection that sends nothing, and a tunnel nobody speaks into', async () => {
    const idle = net.connect(proxy.port, '127.0.0.1');
    expect(await closedWithin(idle, 5_000)).toBe(true);
    const tunnel = net.connect(proxy.port, '127.0.0.1', () => {
      tunnel.write(`CONNECT 127.0.0.1:${originPort} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
    });
    expect(await closedWithin(tunnel, 5_000)).toBe(true);
  });
});

describe('CONNECT', () => {
  function tunnel(target: string, firstBytes: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      const socket = net.connect(proxy.port, '127.0.0.1', () => {
        socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      });
      let received = Buffer.alloc(0);
      let sent = false;
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        if (!sent && received.toString('latin1').includes('200 Connection Established\r\n\r\n')) {
          sent = true;
          received = Buffer.alloc(0);
          socket.write(firstBytes);
        }
      });
      socket.on('close', () => resolve(received));
      setTimeout(() => socket.end(), 1_000).unref();
    });
  }

  it('captures plain HTTP sent inside a tunnel, request by request, against the target', async () => {
    const reply = await tunnel(
      `127.0.0.1:${originPort}`,
      Buffer.from('GET /in-tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    expect(reply.toString()).toContain('"url":"/in-tunnel"');
    const row = await capturedFor('/in-tunnel');
    expect(row).toMatchObject({ kind: 'http', url: `http://127.0.0.1:${originPort}/in-tunnel` });
  });

  it('passes TLS through untouched and records the tunnel', async () => {
    // A raw echo origin: whatever starts with a TLS record byte must come back unchanged.
    const echo = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const echoPort = (echo.address() as AddressInfo).port;
    try {
      const hello = Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]);
      const reply = await tunnel(`127.0.0.1:${echoPort}`, hello);
      expect(reply.equals(hello)).toBe(true);
      const rows = await until(async () => {
        const found = await query<{
          payload: { sizes: { serverToClient: number }; tls: { intercepted: boolean } };
        }>(`select payload from public.entries where kind = 'tunnel' and url = $1`, [
          `127.0.0.1:${echoPort}`,
        ]);
        return found.length > 0 ? found : undefined;
      });
      expect(rows[0]?.payload.sizes.serverToClient).toBe(hello.length);
      expect(rows[0]?.payload.tls.intercepted).toBe(false);
    } finally {
      await new Promise((resolve) => echo.close(resolve));
    }
  });
});

describe('bodies', () => {
  it.each(['gzip', 'br', 'zstd'])(
    'stores a %s response decoded, passes it on encoded',
    async (coding) => {
      const raw = await new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve) => {
        const target = `http://127.0.0.1:${originPort}/encoded/${coding}`;
        http.get(
          {
            host: '127.0.0.1',
            port: proxy.port,
            path: target,
            headers: { host: `127.0.0.1:${originPort}` },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              resolve({
                encoding: response.headers['content-encoding'],
                bytes: Buffer.concat(chunks),
              }),
            );
          },
        );
      });
      expect(raw.encoding).toBe(coding);
      const row = await capturedFor(`/encoded/${coding}`);
      const body = row.payload.responseBody as Record<string, unknown>;
      expect(body).toMatchObject({
        contentEncoding: coding,
        decoded: true,
        size: raw.bytes.length,
        encoding: 'utf8',
      });
      expect(JSON.parse(body.text as string).url).toBe(`/encoded/${coding}`);
    },
  );
});

describe('a Postgres outage during traffic', () => {
  it('spools captures to disk and stores every one exactly once when Postgres returns', async () => {
    const restart = await database.interrupt();
    const paths = Array.from({ length: 20 }, (_, index) => `/during-outage-${index}`);
    for (const path of paths) {
      expect((await viaProxy('GET', `http://127.0.0.1:${originPort}${path}`)).status).toBe(200);
    }
    await until(async () => (writer.stats().spooled >= 20 ? true : undefined));
    expect(writer.stats().databaseUp).toBe(false);
    await restart();
    await until(async () => (writer.stats().spooled === 0 ? true : undefined), 20_000);
    const rows = await query<{ captures: string; distinct_ids: string }>(
      `select count(*) as captures, count(distinct request_id) as distinct_ids
       from public.entries where path like '/during-outage-%'`,
    );
    expect(rows[0]).toEqual({ captures: '20', distinct_ids: '20' });
  }, 60_000);
});
