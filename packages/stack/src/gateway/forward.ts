// Forwards one request to an upstream service on loopback and streams the answer back, over
// kept-alive upstream connections so the gateway adds as little as possible per request.
import {
  Agent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import { sendJson } from './json-response.ts';

const upstreamAgent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 });

/** RFC 9110 §7.6.1 connection-specific fields, never forwarded. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade'];

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

export function forward(
  incoming: IncomingMessage,
  response: ServerResponse,
  target: ForwardTarget,
): void {
  const upstream = request(
    {
      host: '127.0.0.1',
      port: target.port,
      method: incoming.method,
      path: target.path,
      headers: upstreamHeaders(incoming, target),
      agent: upstreamAgent,
    },
    (answer) => {
      const headers = { ...answer.headers };
      for (const name of HOP_BY_HOP) delete headers[name];
      headers['access-control-allow-origin'] = '*';
      response.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(response);
    },
  );
  upstream.on('error', () => {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    sendJson(response, 502, {
      message: 'An invalid response was received from the upstream server',
    });
  });
  incoming.on('aborted', () => upstream.destroy());
  incoming.pipe(upstream);
}
