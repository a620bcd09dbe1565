// The gateway's forwarding, seen from both ends: what an upstream service receives (hop-by-hop
// fields gone, X-Forwarded-* set by the gateway, never by the client) and what the client gets
// back (the upstream's hop-by-hop fields gone, CORS added, large bodies intact both ways, a dead
// or failing upstream answered or cut, a departed client's request aborted upstream). The
// upstream is a plain HTTP server on loopback standing in for a service behind the gateway, as an
// edge function is: it records what arrives and answers as each test tells it.
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FunctionHost } from '../src/functions/function-host.ts';
import { type RunningGateway, startGateway } from '../src/gateway/gateway.ts';
import { createProjectKeys, type ProjectKeys } from '../src/keys.ts';
import { findFreePort } from '../src/ports.ts';
import { until } from './helpers/until.ts';

type Answer = (request: IncomingMessage, response: ServerResponse) => void;

let upstream: Server;
let upstreamPort: number;
let gateway: RunningGateway;
let keys: ProjectKeys;
let answer: Answer;
let received: { headers: IncomingHttpHeaders; rawHeaders: string[]; url: string } | undefined;

beforeAll(async () => {
  keys = await createProjectKeys();
  upstream = createServer((incoming, response) => {
    received = {
      headers: incoming.headers,
      rawHeaders: incoming.rawHeaders,
      url: incoming.url ?? '',
    };
    answer(incoming, response);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamPort = (upstream.address() as { port: number }).port;
  gateway = await startGateway({
    port: await findFreePort(),
    keys,
    restPort: upstreamPort,
    authPort: upstreamPort,
    functions: { find: () => undefined } as unknown as FunctionHost,
    logger: pino({ level: 'silent' }),
  });
});

afterAll(async () => {
  await gateway.stop();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

beforeEach(() => {
  received = undefined;
  answer = (_incoming, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('[]');
  };
});

/** One HTTP/1.1 exchange written by hand, so the test chooses every header line. */
function rawExchange(head: string, body = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(`${head.replace(/\n/g, '\r\n')}\r\n\r\n${body}`);
  });
}

const restPath = '/rest/v1/notes?select=id';

describe('what the upstream receives', () => {
  it('leaves out hop-by-hop fields and every field the Connection header names (RFC 9110 §7.6.1)', async () => {
    const response = await rawExchange(
      [
        `GET ${restPath} HTTP/1.1`,
        'Host: gateway.test',
        `apikey: ${keys.anonKey}`,
        'Connection: close, X-Secret-Hop',
        'X-Secret-Hop: only-for-the-gateway',
        'Keep-Alive: timeout=5',
        'Proxy-Connection: keep-alive',
        'TE: trailers',
        'X-Kept: yes',
      ].join('\n'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    const headers = received?.headers ?? {};
    expect(headers['x-kept']).toBe('yes');
    for (const name of ['x-secret-hop', 'keep-alive', 'proxy-connection', 'te']) {
      expect(headers[name], name).toBeUndefined();
    }
    // The upstream connection is the gateway's own, kept alive whatever the client asked.
    expect(headers.connection).toBe('keep-alive');
  });

  it('sets X-Forwarded-* itself, replacing what a client claims', async () => {
    await rawExchange(
      [
        `GET ${restPath} HTTP/1.1`,
        'Host: gateway.test',
        `apikey: ${keys.anonKey}`,
        'Connection: close',
        'X-Forwarded-For: 203.0.113.7',
        'X-Forwarded-Host: evil.test',
        'X-Forwarded-Proto: https',
        'X-Forwarded-Prefix: /admin',
      ].join('\n'),
    );
    const headers = received?.headers ?? {};
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-forwarded-host']).toBe('gateway.test');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-prefix']).toBe('/rest/v1');
    // Each exactly once: the client's lines are dropped, not merged.
    const names = (received?.rawHeaders ?? []).filter((_, index) => index % 2 === 0);
    expect(names.filter((name) => name.toLowerCase().startsWith('x-forwarded-'))).toHaveLength(4);
  });

  it('sends the JWT the project key stands for, and the path without the prefix', async () => {
    await rawExchange(
      [
        `GET ${restPath} HTTP/1.1`,
        'Host: gateway.test',
        `apikey: ${keys.publishableKey}`,
        'Connection: close',
      ].join('\n'),
    );
    expect(received?.url).toBe('/notes?select=id');
    expect(received?.headers.authorization).toBe(`Bearer ${keys.anonKey}`);
  });

  it('takes a body sent with Expect: 100-continue (Node answers the expectation; it is not forwarded)', async () => {
    answer = (incoming, response) => {
      let body = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk) => {
        body += chunk;
      });
      incoming.on('end', () => {
        response.writeHead(201, { 'content-type': 'text/plain' });
        response.end(`got ${body.length}`);
      });
    };
    const body = 'x'.repeat(4096);
    const status = await new Promise<{ code: number | undefined; text: string }>(
      (resolve, reject) => {
        const outgoing = request(`${gateway.url}${restPath}`, {
          method: 'POST',
          headers: {
            apikey: keys.anonKey,
            'content-type': 'text/plain',
            'content-length': String(body.length),
            expect: '100-continue',
          },
        });
        outgoing.on('continue', () => outgoing.end(body));
        outgoing.on('response', (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk) => {
            text += chunk;
          });
          response.on('end', () => resolve({ code: response.statusCode, text }));
        });
        outgoing.on('error', reject);
      },
    );
    expect(status).toEqual({ code: 201, text: 'got 4096' });
    expect(received?.headers.expect).toBeUndefined();
  });

  it('streams a large request body through unchanged', async () => {
    answer = (incoming, response) => {
      let length = 0;
      let sum = 0;
      incoming.on('data', (chunk: Buffer) => {
        length += chunk.length;
        for (const byte of chunk) sum = (sum + byte) % 65_521;
      });
      incoming.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ length, sum }));
      });
    };
    const body = Buffer.alloc(8 * 1024 * 1024);
    for (let index = 0; index < body.length; index += 1) body[index] = (index * 31) % 251;
    let sum = 0;
    for (const byte of body) sum = (sum + byte) % 65_521;
    const response = await fetch(`${gateway.url}${restPath}`, {
      method: 'POST',
      headers: { apikey: keys.anonKey, 'content-type': 'application/octet-stream' },
      body,
    });
    expect(await response.json()).toEqual({ length: body.length, sum });
  });
});

describe('what the client gets back', () => {
  it("drops the upstream's hop-by-hop fields and adds CORS", async () => {
    answer = (_incoming, response) => {
      response.writeHead(200, {
        'content-type': 'application/json',
        connection: 'X-Upstream-Hop',
        'x-upstream-hop': 'internal',
        'keep-alive': 'timeout=99',
        trailer: 'x-checksum',
        'content-range': '0-0/*',
      });
      response.end('[{"id":1}]');
    };
    const response = await rawExchange(
      [`GET ${restPath} HTTP/1.1`, 'Host: gateway.test', `apikey: ${keys.anonKey}`].join('\n') +
        '\nConnection: close',
    );
    const [head, body] = response.split('\r\n\r\n');
    const lines = (head ?? '').toLowerCase().split('\r\n');
    expect(lines).toContain('content-range: 0-0/*');
    expect(lines).toContain('access-control-allow-origin: *');
    expect(lines.some((line) => line.startsWith('x-upstream-hop'))).toBe(false);
    expect(lines.some((line) => line.startsWith('trailer'))).toBe(false);
    expect(lines.some((line) => line.includes('timeout=99'))).toBe(false);
    expect(lines).toContain('connection: close');
    expect(body).toContain('[{"id":1}]');
  });

  it('streams a large answer to a slow reader without losing or reordering bytes', async () => {
    const chunk = Buffer.alloc(64 * 1024);
    const chunks = 256; // 16 MiB, far beyond the socket buffers, so backpressure must hold
    answer = (_incoming, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      let sent = 0;
      const pump = () => {
        while (sent < chunks) {
          chunk.fill(sent % 256);
          sent += 1;
          if (!response.write(Buffer.from(chunk))) {
            response.once('drain', pump);
            return;
          }
        }
        response.end();
      };
      pump();
    };
    const response = await fetch(`${gateway.url}${restPath}`, {
      headers: { apikey: keys.anonKey },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let offset = 0;
    let wrong = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (let index = 0; index < value.length; index += 1) {
        if (value[index] !== Math.floor((offset + index) / chunk.length) % 256) wrong += 1;
      }
      offset += value.length;
      if (offset < 4 * chunk.length) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(offset).toBe(chunks * chunk.length);
    expect(wrong).toBe(0);
  });

  it('aborts the upstream request when the client goes away mid-answer', async () => {
    let upstreamClosedEarly = false;
    answer = (_incoming, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: first\n\n');
      response.on('close', () => {
        upstreamClosedEarly = !response.writableFinished;
      });
    };
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}${restPath}`, {
      headers: { apikey: keys.anonKey },
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    controller.abort();
    await until(() => upstreamClosedEarly || undefined);
  });

  it('answers 502 when the upstream closes the connection without answering', async () => {
    answer = (incoming) => {
      incoming.socket.destroy();
    };
    const response = await fetch(`${gateway.url}${restPath}`, {
      headers: { apikey: keys.anonKey },
    });
    expect(response.status).toBe(502);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(await response.json()).toEqual({
      message: 'An invalid response was received from the upstream server',
    });
  });

  it('cuts the client connection when the upstream fails mid-answer, never ending it cleanly', async () => {
    answer = (_incoming, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('[{"id":1},');
      setTimeout(() => response.socket?.destroy(), 20);
    };
    const response = await fetch(`${gateway.url}${restPath}`, {
      headers: { apikey: keys.anonKey },
    });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('still refuses a request without an API key before anything reaches the upstream', async () => {
    const response = await fetch(`${gateway.url}${restPath}`);
    expect(response.status).toBe(401);
    expect(received).toBeUndefined();
  });
});
