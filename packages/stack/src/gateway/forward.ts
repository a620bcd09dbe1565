// Forwards one request to an upstream service on loopback and streams the answer back. Upstream
// connections are kept alive in an undici pool per port, whose stream() writes the upstream
// body straight into our response: the cheapest path, since every cycle spent here is taken from
// PostgREST on the same cores.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
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
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
];

export interface ForwardTarget {
  port: number;
  /** Path and query as the upstream sees them (the gateway prefix removed). */
  path: string;
  /** Request headers to set or replace; undefined removes the header. */
  headers?: Record<string, string | undefined>;
  /** The prefix that was removed, for X-Forwarded-Prefix. */
  prefix: string;
}

function upstreamHeaders(incoming: IncomingMessage, target: ForwardTarget): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...incoming.headers };
  for (const name of HOP_BY_HOP) delete headers[name];
  headers['x-forwarded-for'] = incoming.socket.remoteAddress ?? '';
  headers['x-forwarded-host'] = incoming.headers.host ?? '';
  headers['x-forwarded-proto'] = 'http';
  headers['x-forwarded-prefix'] = target.prefix;
  for (const [name, value] of Object.entries(target.headers ?? {})) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  return headers;
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function forward(
  upstreams: UpstreamPools,
  incoming: IncomingMessage,
  response: ServerResponse,
  target: ForwardTarget,
): void {
  const method = incoming.method ?? 'GET';
  upstreams
    .get(target.port)
    .stream(
      {
        path: target.path,
        method,
        headers: upstreamHeaders(incoming, target) as Record<string, string>,
        body: BODYLESS.has(method) ? null : incoming,
        opaque: response,
      },
      ({ statusCode, headers }) => {
        const answer: Record<string, string | string[] | undefined> = { ...headers };
        for (const name of HOP_BY_HOP) delete answer[name];
        answer['access-control-allow-origin'] = '*';
        response.writeHead(statusCode, answer);
        return response;
      },
    )
    .catch(() => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      sendJson(response, 502, {
        message: 'An invalid response was received from the upstream server',
      });
    });
}
