// Plain HTTP forwarding (absolute-form requests, 002 §4.3): the request streams to the origin and
// the response streams back, each teed into a bounded capture; the exchange becomes one capture.
// An unreachable origin answers 502 with a reason and is captured as kind `error`.
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { BodyTap } from '../capture/body-tap.ts';
import type { Capture } from '../capture/capture.ts';

export interface ForwardContext {
  agent: http.Agent;
  bodyCap: number;
  source: 'manual' | 'pac';
  deliver(capture: Capture): void;
}

/** rawHeaders as [[name, value], …] in wire order and case. */
function headerPairs(raw: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    pairs.push([raw[index] as string, raw[index + 1] as string]);
  }
  return pairs;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function forwardedHeaders(raw: string[]): string[] {
  const listed = new Set(
    raw
      .filter((_, index) => index % 2 === 0)
      .flatMap((name, index) =>
        name.toLowerCase() === 'connection'
          ? (raw[index * 2 + 1] ?? '').split(',').map((token) => token.trim().toLowerCase())
          : [],
      ),
  );
  const out: string[] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out.push(raw[index] as string, raw[index + 1] as string);
  }
  return out;
}

export function forwardHttp(
  request: IncomingMessage,
  response: ServerResponse,
  target: URL,
  context: ForwardContext,
): void {
  const started = performance.now();
  const startedAt = new Date();
  const requestTap = new BodyTap(context.bodyCap);
  const responseTap = new BodyTap(context.bodyCap);
  const timings = { connect: -1, send: 0, wait: 0, receive: 0 };
  let requestSentAt = started;
  let firstByteAt = started;
  const base = {
    method: request.method ?? 'GET',
    scheme: 'http',
    host: target.hostname,
    port: Number(target.port || 80),
    path: target.pathname,
    query: target.search.replace(/^\?/, ''),
    url: target.href,
    httpVersion: `HTTP/${request.httpVersion}`,
    requestHeaders: headerPairs(request.rawHeaders),
    client: { ip: request.socket.remoteAddress ?? null, port: request.socket.remotePort ?? null },
    attribution: { rule: 'proxy' },
    source: context.source,
  };

  const finish = (kind: Capture['kind'], extra: Record<string, unknown>) => {
    context.deliver({
      request_id: randomUUID(),
      ts: startedAt.toISOString(),
      kind,
      device_uuid: null,
      payload: {
        ...base,
        requestBody: requestTap.result(
          request.headers['content-type'],
          request.headers['content-encoding'],
        ),
        timings: { ...timings, total: Math.round((performance.now() - started) * 100) / 100 },
        ...extra,
      },
    });
  };

  const upstream = http.request({
    agent: context.agent,
    host: target.hostname,
    port: target.port || 80,
    method: request.method,
    path: `${target.pathname}${target.search}`,
    headers: forwardedHeaders(request.rawHeaders),
    setHost: false,
  });
  upstream.on('socket', (socket) => {
    if (socket.connecting) {
      socket.once('connect', () => {
        timings.connect = Math.round((performance.now() - started) * 100) / 100;
      });
    } else {
      timings.connect = 0; // a kept-alive connection
    }
  });
  upstream.on('finish', () => {
    requestSentAt = performance.now();
    timings.send = Math.round((requestSentAt - started) * 100) / 100;
  });
  upstream.on('response', (upstreamResponse) => {
    firstByteAt = performance.now();
    timings.wait = Math.round((firstByteAt - requestSentAt) * 100) / 100;
    response.writeHead(
      upstreamResponse.statusCode ?? 502,
      upstreamResponse.statusMessage,
      forwardedHeaders(upstreamResponse.rawHeaders),
    );
    upstreamResponse.on('data', (chunk: Buffer) => responseTap.push(chunk));
    upstreamResponse.pipe(response);
    upstreamResponse.on('end', () => {
      timings.receive = Math.round((performance.now() - firstByteAt) * 100) / 100;
      finish('http', {
        statusCode: upstreamResponse.statusCode,
        statusText: upstreamResponse.statusMessage,
        responseHeaders: headerPairs(upstreamResponse.rawHeaders),
        responseBody: responseTap.result(
          upstreamResponse.headers['content-type'],
          upstreamResponse.headers['content-encoding'],
        ),
        sizes: { requestBody: requestTap.size, responseBody: responseTap.size },
      });
    });
  });
  upstream.on('error', (error) => {
    const reason = `upstream ${target.host} unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`;
    if (!response.headersSent) {
      response.writeHead(502, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'bad_gateway', message: reason }));
    } else {
      response.destroy();
    }
    finish('error', { statusCode: 502, error: reason });
  });

  request.on('data', (chunk: Buffer) => requestTap.push(chunk));
  request.pipe(upstream);
}
