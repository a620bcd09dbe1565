// The gateway's forwarding, seen from both ends: what an upstream service receives (hop-by-hop
// fields gone, X-Forwarded-* set by the gateway, never by the client) and what the client gets
// back (the upstream's hop-by-hop fields gone, CORS added, large bodies intact both ways, a dead
// or failing upstream answered or cut, a departed client's request aborted upstream). The
// upstream is a plain HTTP server on loopback standing in for a service behind the gateway, as an
// edge function is: it records what arrives and answers as each test tells it. Every property
// is checked on both ways through the gateway: nginx's fast path straight to the upstream, and
// the Node router (a credential form the fast path leaves to it).
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

/** One HTTP/1.1 exchange written by hand, so the test chooses every header line and byte. */
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
    socket.write(Buffer.from(`${head.replace(/\n/g, '\r\n')}\r\n\r\n${body}`, 'latin1'));
  });
}

const restPath = '/rest/v1/notes?select=id';

/** The raw header names the upstream received, in order. */
const receivedNames = () => (received?.rawHeaders ?? []).filter((_, index) => index % 2 === 0);
const servedBy = () => (receivedNames().includes('X-Forwarded-Prefix') ? 'nginx' : 'router');

/** A GET of restPath with these header lines (and Host, and Connection: close), by hand. */
function restGet(lines: string[], body = ''): Promise<string> {
  return rawExchange(
    [`GET ${restPath} HTTP/1.1`, 'Host: gateway.test', ...lines, 'Connection: close'].join('\n'),
    body,
  );
}

interface Route {
  name: string;
  /** The REST credentials sent: the fast path takes the first form, only the router the second. */
  credentials: () => Record<string, string>;
  /** The Authorization the upstream receives for them. */
  upstreamAuthorization: () => string;
  /** How X-Forwarded-Prefix is spelled on the wire: nginx's configuration or undici's lowercase. */
  prefixHeaderName: string;
  /**
   * Whether fields the upstream's own Connection header names are dropped. nginx cannot; the fast
   * path's only upstream is PostgREST, whose server (warp) never names any.
   */
  dropsConnectionNamedAnswerFields: boolean;
}

const routes: Route[] = [
  {
    name: 'fast path (nginx straight to the upstream)',
    credentials: () => ({ apikey: keys.anonKey }),
    upstreamAuthorization: () => `Bearer ${keys.anonKey}`,
    prefixHeaderName: 'X-Forwarded-Prefix',
    dropsConnectionNamedAnswerFields: false,
  },
  {
    name: 'Node router',
    credentials: () => ({ apikey: 'a-user-token', authorization: 'bearer  a-user-token' }),
    upstreamAuthorization: () => 'bearer  a-user-token',
    prefixHeaderName: 'x-forwarded-prefix',
    dropsConnectionNamedAnswerFields: true,
  },
];

const headerLines = (headers: Record<string, string>) =>
  Object.entries(headers).map(([name, value]) => `${name}: ${value}`);

describe.each(routes)('$name', (route) => {
  it('reaches the upstream this way, with the Authorization the credentials stand for', async () => {
    await restGet(headerLines(route.credentials()));
    expect(receivedNames()).toContain(route.prefixHeaderName);
    expect(received?.headers.authorization).toBe(route.upstreamAuthorization());
  });

  it('leaves out hop-by-hop fields (RFC 9110 §7.6.1)', async () => {
    const response = await rawExchange(
      [
        `GET ${restPath} HTTP/1.1`,
        'Host: gateway.test',
        ...headerLines(route.credentials()),
        'Connection: close',
        'Keep-Alive: timeout=5',
        'Proxy-Connection: keep-alive',
        'TE: trailers',
        'X-Kept: yes',
      ].join('\n'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    const headers = received?.headers ?? {};
    expect(headers['x-kept']).toBe('yes');
    for (const name of ['keep-alive', 'proxy-connection', 'te']) {
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
        ...headerLines(route.credentials()),
        'Connection: close',
        'X-Forwarded-For: 203.0.113.7',
        'X-Real-IP: 203.0.113.8',
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
    expect(headers['x-real-ip']).toBeUndefined();
    // Each exactly once: the client's lines are dropped, not merged.
    const forwarded = receivedNames().filter((name) =>
      name.toLowerCase().startsWith('x-forwarded-'),
    );
    expect(forwarded).toHaveLength(4);
  });

  it('sends the path without the prefix', async () => {
    await restGet(headerLines(route.credentials()));
    expect(received?.url).toBe('/notes?select=id');
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
            ...route.credentials(),
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
      headers: { ...route.credentials(), 'content-type': 'application/octet-stream' },
      body,
    });
    expect(await response.json()).toEqual({ length: body.length, sum });
  });
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
    const response = await restGet(headerLines(route.credentials()));
    const [head, body] = response.split('\r\n\r\n');
    const lines = (head ?? '').toLowerCase().split('\r\n');
    expect(lines).toContain('content-range: 0-0/*');
    expect(lines).toContain('access-control-allow-origin: *');
    expect(lines.some((line) => line.startsWith('x-upstream-hop'))).toBe(
      !route.dropsConnectionNamedAnswerFields,
    );
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
      headers: route.credentials(),
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
      headers: route.credentials(),
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
      headers: route.credentials(),
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
      headers: route.credentials(),
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

describe('which way a REST request goes', () => {
  it('sends a request whose Connection header names fields to the router, which removes them', async () => {
    const response = await rawExchange(
      [
        `GET ${restPath} HTTP/1.1`,
        'Host: gateway.test',
        `apikey: ${keys.anonKey}`,
        'Connection: close, X-Secret-Hop',
        'X-Secret-Hop: only-for-the-gateway',
      ].join('\n'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(servedBy()).toBe('router');
    expect(received?.headers['x-secret-hop']).toBeUndefined();
  });

  // Each case: what the fast path may do, and otherwise that the router decides (credentials.ts).
  const cases: Array<{
    name: string;
    apikey?: () => string;
    authorization?: () => string;
    way: 'nginx' | 'router' | 'refused';
    upstreamAuthorization?: () => string;
  }> = [
    {
      name: 'anon key alone',
      apikey: () => keys.anonKey,
      way: 'nginx',
      upstreamAuthorization: () => `Bearer ${keys.anonKey}`,
    },
    {
      name: 'publishable key alone',
      apikey: () => keys.publishableKey,
      way: 'nginx',
      upstreamAuthorization: () => `Bearer ${keys.anonKey}`,
    },
    {
      name: 'secret key alone',
      apikey: () => keys.secretKey,
      way: 'nginx',
      upstreamAuthorization: () => `Bearer ${keys.serviceRoleKey}`,
    },
    {
      name: 'project key with a user token as the bearer',
      apikey: () => keys.publishableKey,
      authorization: () => 'Bearer a-user-token',
      way: 'nginx',
      upstreamAuthorization: () => 'Bearer a-user-token',
    },
    {
      name: 'project key with a secret key as the bearer (translated by the router)',
      apikey: () => keys.anonKey,
      authorization: () => `Bearer ${keys.secretKey}`,
      way: 'router',
      upstreamAuthorization: () => `Bearer ${keys.serviceRoleKey}`,
    },
    {
      name: 'the same user token in both headers',
      apikey: () => 'a-user-token',
      authorization: () => 'Bearer a-user-token',
      way: 'nginx',
      upstreamAuthorization: () => 'Bearer a-user-token',
    },
    {
      name: 'the same token, lowercase scheme',
      apikey: () => 'a-user-token',
      authorization: () => 'bearer a-user-token',
      way: 'router',
      upstreamAuthorization: () => 'bearer a-user-token',
    },
    {
      name: 'different tokens in the two headers',
      apikey: () => 'a-user-token',
      authorization: () => 'Bearer another-token',
      way: 'refused',
    },
    {
      name: 'a bearer that merely starts with the apikey',
      apikey: () => 'a-user-token',
      authorization: () => 'Bearer a-user-token|a-user-token',
      way: 'refused',
    },
    {
      name: 'an apikey that merely contains the bearer',
      apikey: () => 'a-user-token|a-user-token',
      authorization: () => 'Bearer a-user-token',
      way: 'refused',
    },
    { name: 'a user token in apikey alone', apikey: () => 'a-user-token', way: 'refused' },
    {
      name: 'a user token in Authorization alone',
      authorization: () => 'Bearer a-user-token',
      way: 'refused',
    },
    // nginx compares a map's plain strings ignoring case; a key is not a key in other letters.
    {
      name: 'the secret key in capitals',
      apikey: () => keys.secretKey.toUpperCase(),
      way: 'refused',
    },
    {
      name: 'the anon key in small letters',
      apikey: () => keys.anonKey.toLowerCase(),
      way: 'refused',
    },
  ];

  it.each(cases)('$name: $way', async (testCase) => {
    const headers: Record<string, string> = {};
    if (testCase.apikey) headers.apikey = testCase.apikey();
    if (testCase.authorization) headers.authorization = testCase.authorization();
    const response = await fetch(`${gateway.url}${restPath}`, { headers });
    if (testCase.way === 'refused') {
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(received).toBeUndefined();
      return;
    }
    expect(response.status).toBe(200);
    expect(servedBy()).toBe(testCase.way);
    expect(received?.headers.authorization).toBe(testCase.upstreamAuthorization?.());
  });

  it('with two apikey lines, decides on the first (nginx 1.22) and forwards the token it checked', async () => {
    const response = await restGet([
      'apikey: a-user-token',
      'apikey: another-token',
      'Authorization: Bearer a-user-token',
    ]);
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(received?.headers.authorization).toBe('Bearer a-user-token');
  });

  it('refuses two Authorization lines outright', async () => {
    const response = await restGet([
      'apikey: a-user-token',
      'Authorization: Bearer a-user-token',
      'Authorization: Bearer another-token',
    ]);
    expect(response).toMatch(/^HTTP\/1\.1 400/);
    expect(received).toBeUndefined();
  });

  // nginx and Node disagree on whitespace (Node trims a leading tab; JavaScript's \s takes
  // U+00A0, PCRE's does not): every such spelling is the router's to judge.
  it.each([
    ['a tab before the scheme', '\tBearer '],
    ['a no-break space after the scheme', 'Bearer\xa0'],
  ])('translates a secret-key bearer spelled with %s as the router does', async (_what, prefix) => {
    await restGet([`apikey: ${keys.anonKey}`, `Authorization: ${prefix}${keys.secretKey}`]);
    expect(servedBy()).toBe('router');
    expect(received?.headers.authorization).toBe(`Bearer ${keys.serviceRoleKey}`);
  });

  it('refuses a token holding a no-break space, in both headers, as the router does', async () => {
    const response = await restGet(['apikey: tok\xa0x', 'Authorization: Bearer tok\xa0x']);
    expect(response).toMatch(/^HTTP\/1\.1 401/);
    expect(received).toBeUndefined();
  });

  it('leaves a GET with a body to the router, which does not forward the body', async () => {
    let body = '';
    answer = (incoming, response) => {
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk) => {
        body += chunk;
      });
      incoming.on('end', () => response.end('[]'));
    };
    const response = await restGet([`apikey: ${keys.anonKey}`, 'Content-Length: 5'], 'hello');
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(servedBy()).toBe('router');
    expect(body).toBe('');
  });

  it('serves an HTTP/1.0 request without Host on the router path too', async () => {
    const response = await rawExchange('GET /auth/v1/health HTTP/1.0');
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    expect(received?.url).toBe('/health');
  });

  it('leaves preflights and other methods to the router', async () => {
    const preflight = await fetch(`${gateway.url}${restPath}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.test', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(received).toBeUndefined();
    const options = await fetch(`${gateway.url}${restPath}`, {
      method: 'OPTIONS',
      headers: { apikey: keys.anonKey },
    });
    expect(options.status).toBe(200);
    expect(servedBy()).toBe('router');
  });

  it.each([
    ['/rest/v1/notes%2Fx?select=a%20b', '/notes%2Fx?select=a%20b'],
    ['/rest/v1//notes', '//notes'],
    ['/rest/v1/../auth/v1/admin', '/../auth/v1/admin'],
    ['/rest/v1?select=1', '/?select=1'],
    ['/rest/v1', '/'],
  ])('passes the request target %s on raw, as %s', async (target, expected) => {
    await rawExchange(
      [
        `GET ${target} HTTP/1.1`,
        'Host: gateway.test',
        `apikey: ${keys.anonKey}`,
        'Connection: close',
      ].join('\n'),
    );
    expect(received?.url).toBe(expected);
  });

  it("answers a path that only starts like /rest/v1 with the router's 404", async () => {
    const response = await fetch(`${gateway.url}/rest/v1x/notes`, {
      headers: { apikey: keys.anonKey },
    });
    expect(response.status).toBe(404);
    expect(received).toBeUndefined();
  });
});
