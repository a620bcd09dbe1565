// Forwards one request to an upstream service on loopback and streams the answer back. Upstream
// connections are kept alive in an undici pool per port; the answer is relayed through undici's
// dispatch handler straight into our response, with no promise, stream adapter or header object
// copied on the way: every cycle spent here is taken from PostgREST on the same cores
// (docs/local-stack.md "Benchmark" has the profile this follows).
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import { sendJson } from './json-response.ts';

/** The upstream connection pools of one gateway, one per upstream port. */
export class UpstreamPools {
  private readonly pools = new Map<number, Pool>();

  get(port: number): Pool {
    let pool = this.pools.get(port);
    if (!pool) {
      pool = new Pool(`http://127.0.0.1:${port}`, { connections: 64, keepAliveTimeout: 10_000 });
      this.pools.set(port, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
}

/** RFC 9110 §7.6.1 connection-specific fields, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
]);

/**
 * Never taken from the client: X-Forwarded-* are the gateway's to set (so a client cannot choose
 * what the upstream believes of it), X-Real-IP is the front door's note to the router, and
 * Node's server has already answered `Expect:
 * 100-continue` on this hop (RFC 9110 §10.1.1), which undici would refuse to send anyway.
 */
const NOT_FORWARDED = new Set([
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-prefix',
  'x-real-ip',
  'expect',
]);

/**
 * RFC 9110 §7.6.1: besides the fixed list, a proxy removes every field the Connection header
 * names. Undefined (the usual case) when the header names none.
 */
function connectionOptions(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const names = new Set<string>();
  for (const line of Array.isArray(value) ? value : [value]) {
    for (const token of line.split(',')) {
      const name = token.trim().toLowerCase();
      if (name && name !== 'keep-alive' && name !== 'close') names.add(name);
    }
  }
  return names.size > 0 ? names : undefined;
}

export interface ForwardTarget {
  port: number;
  /** Path and query as the upstream sees them (the gateway prefix removed). */
  path: string;
  /** Request headers to set or replace; undefined removes the header. */
  headers?: Record<string, string | undefined>;
  /** The prefix that was removed, for X-Forwarded-Prefix. */
  prefix: string;
  /** The client's address, for X-Forwarded-For. */
  clientAddress: string;
}

/** The request's headers as undici's flat [name, value, …] list, hop-by-hop fields left out. */
function upstreamHeaders(incoming: IncomingMessage, target: ForwardTarget): string[] {
  const headers = incoming.headers;
  const replaced = target.headers ?? {};
  const named = connectionOptions(headers.connection);
  const list: string[] = [];
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || NOT_FORWARDED.has(name) || name in replaced) continue;
    if (named?.has(name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === 'string') list.push(name, value);
    else for (const item of value) list.push(name, item);
  }
  list.push(
    'x-forwarded-for',
    target.clientAddress,
    'x-forwarded-host',
    headers.host ?? '',
    'x-forwarded-proto',
    'http',
    'x-forwarded-prefix',
    target.prefix,
  );
  for (const name in replaced) {
    const value = replaced[name];
    if (value !== undefined) list.push(name, value);
  }
  return list;
}

/** The upstream's response headers for our client: hop-by-hop fields out, CORS in. */
function downstreamHeaders(upstream: Record<string, string | string[] | undefined>) {
  const named = connectionOptions(upstream.connection);
  const answer: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    answer[name] = upstream[name];
  }
  answer['access-control-allow-origin'] = '*';
  return answer;
}

/**
 * Relays one upstream answer into the client's response, holding the upstream back while the
 * client is slow (backpressure) and aborting it when the client goes away.
 */
class ResponseRelay implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private readonly response: ServerResponse;

  constructor(response: ServerResponse) {
    this.response = response;
    response.once('close', this.onClientClose);
  }

  private readonly onClientClose = () => {
    if (!this.response.writableFinished) this.controller?.abort(new Error('client closed'));
  };

  private readonly onDrain = () => {
    this.controller?.resume();
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // The client left while the request waited for a free upstream connection.
    if (this.response.destroyed) controller.abort(new Error('client closed'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.response.writeHead(statusCode, downstreamHeaders(headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.response.write(chunk)) {
      controller.pause();
      this.response.once('drain', this.onDrain);
    }
  }

  onResponseEnd(): void {
    this.response.off('close', this.onClientClose);
    this.response.end();
  }

  /** Also called by undici when it refuses the request before sending it (a bad header value). */
  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.response.off('close', this.onClientClose);
    if (this.response.destroyed) return;
    if (this.response.headersSent) {
      this.response.destroy();
      return;
    }
    const answer = upstreamFailureAnswer(error);
    sendJson(this.response, answer.status, answer.body);
  }
}

/**
 * Kong's answers when the upstream fails before answering, as nginx's fast path gives them too
 * (nginx-config.ts): 504 when it never sent its head in time (undici's headersTimeout, 300 s,
 * as nginx's proxy_read_timeout), else 502.
 */
export function upstreamFailureAnswer(error: Error): { status: number; body: { message: string } } {
  if ((error as { code?: unknown }).code === 'UND_ERR_HEADERS_TIMEOUT') {
    return { status: 504, body: { message: 'The upstream server is timing out' } };
  }
  return {
    status: 502,
    body: { message: 'An invalid response was received from the upstream server' },
  };
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function forward(
  upstreams: UpstreamPools,
  incoming: IncomingMessage,
  response: ServerResponse,
  target: ForwardTarget,
): void {
  const method = incoming.method ?? 'GET';
  upstreams.get(target.port).dispatch(
    {
      path: target.path,
      method: method as Dispatcher.HttpMethod,
      headers: upstreamHeaders(incoming, target),
      body: BODYLESS.has(method) ? null : incoming,
    },
    new ResponseRelay(response),
  );
}
