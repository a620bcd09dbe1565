// Forwarding one exchange (002 §4.3): absolute-form HTTP, origin-form HTTP inside a tunnel, and
// decrypted HTTPS (HTTP/1.1 or HTTP/2 from the client; HTTP/1.1 to the origin). The request
// streams to the origin and the response streams back, each teed into a bounded capture; the
// exchange becomes one capture. An unreachable origin answers 502 with a reason and is captured
// as kind `error`. `Expect: 100-continue` is relayed: the client gets 100 when the origin sends it.
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { BodyTap } from '../capture/body-tap.ts';
import { type Capture, connectionFields } from '../capture/capture.ts';
import type { ConnectionInfo } from '../connection-info.ts';

export interface ForwardContext {
  agent: http.Agent;
  httpsAgent: https.Agent;
  /**
   * The DNS lookup for a destination port: the destination policy's (refused addresses never
   * reach a connect; the address checked is the address used) and, on the proxy's own ports, one
   * that refuses names resolving to the proxy.
   */
  lookupFor(port: number): LookupFunction;
  bodyCap: number;
  deliver(capture: Capture): void;
}

type ClientRequest = IncomingMessage | Http2ServerRequest;
type ClientResponse = ServerResponse | Http2ServerResponse;

/** rawHeaders as [[name, value], …] in wire order and case (HTTP/2 pseudo-headers included). */
export function headerPairs(raw: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index] as string;
    const value = raw[index + 1] as string;
    // A device port's proxy credentials are a certificate bundle's secret (port-guard.ts): the
    // capture keeps the scheme only.
    pairs.push([
      name,
      name.toLowerCase() === 'proxy-authorization' ? value.replace(/\s.*$/s, ' [redacted]') : value,
    ]);
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

/**
 * Fields a Connection header may not remove: they frame the message (RFC 9112 §6) or name its
 * target. Letting `Connection: Content-Length` strip the length would send a body unframed on a
 * shared upstream connection, where the origin reads it as the next request (smuggling).
 */
const FRAMING = new Set(['content-length', 'host']);

/**
 * The headers to send on: hop-by-hop ones and those the Connection header lists removed, and
 * HTTP/2 pseudo-headers turned into what HTTP/1.1 says (`:authority` becomes Host).
 */
export function forwardedHeaders(raw: string[], keep: ReadonlySet<string> = new Set()): string[] {
  const listed = new Set(
    raw
      .filter((_, index) => index % 2 === 0)
      .flatMap((name, index) =>
        name.toLowerCase() === 'connection'
          ? (raw[index * 2 + 1] ?? '').split(',').map((token) => token.trim().toLowerCase())
          : [],
      )
      .filter((name) => !FRAMING.has(name)),
  );
  const out: string[] = [];
  let hasHost = false;
  let authority: string | undefined;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (name === ':authority') authority = raw[index + 1];
    if (name === 'host') hasHost = true;
    if (name.startsWith(':')) continue;
    if (!keep.has(name) && (HOP_BY_HOP.has(name) || listed.has(name))) continue;
    out.push(raw[index] as string, raw[index + 1] as string);
  }
  if (!hasHost && authority !== undefined) out.unshift('host', authority);
  return out;
}

/**
 * The request to the origin: keep-alive agents, headers as forwarded (`keep` names hop-by-hop
 * headers to pass, e.g. Upgrade), and for HTTPS the name the client asked for as SNI, which the
 * origin's certificate is checked against.
 */
export function requestUpstream(
  request: ClientRequest,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
  keep?: ReadonlySet<string>,
): http.ClientRequest {
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const hostname = target.hostname.replace(/^\[|\]$/g, '');
  const headers = forwardedHeaders(request.rawHeaders, keep);
  // A body without a length (chunked from an HTTP/1.1 client, DATA frames from an HTTP/2 one)
  // goes on chunked: Node sends GET/DELETE/OPTIONS bodies unframed unless told to.
  if (request.headers['content-length'] === undefined && hasBody(request)) {
    headers.push('transfer-encoding', 'chunked');
  }
  const port = Number(target.port || (secure ? 443 : 80));
  const options = {
    host: hostname,
    port,
    method: request.method,
    path: `${target.pathname}${target.search}`,
    headers,
    setHost: false,
    lookup: context.lookupFor(port),
  };
  return secure
    ? https.request({
        ...options,
        agent: context.httpsAgent,
        servername: info.tls?.sni ?? hostname,
      })
    : http.request({ ...options, agent: context.agent });
}

function hasBody(request: ClientRequest): boolean {
  if (request.httpVersionMajor === 2)
    return !(request as Http2ServerRequest).stream.endAfterHeaders;
  return request.headers['transfer-encoding'] !== undefined;
}

/** Header names HTTP/2 allows once (Node refuses a response repeating them). */
const SINGLE_VALUE = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
  'content-md5',
  'content-range',
  'location',
  'etag',
  'last-modified',
  'expires',
  'age',
  'date',
  'server',
  'retry-after',
  'authorization',
  'max-forwards',
  'from',
  'referer',
  'user-agent',
  'if-modified-since',
  'if-unmodified-since',
  'if-range',
  'access-control-allow-credentials',
  'access-control-max-age',
  'access-control-request-method',
]);

/**
 * An HTTP/1.1 origin's headers as an HTTP/2 response may carry them: names lower-cased, a
 * repeated single-value field kept once (the first, as browsers do), other repeats joined
 * (RFC 9110 §5.3), Set-Cookie kept as a list.
 */
function http2ResponseHeaders(raw: string[]): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    const value = raw[index + 1] as string;
    const previous = headers[name];
    if (previous === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (name === 'set-cookie') (previous as string[]).push(value);
    else if (!SINGLE_VALUE.has(name)) headers[name] = `${previous}, ${value}`;
  }
  return headers;
}

function roundedSince(start: number): number {
  return Math.round((performance.now() - start) * 100) / 100;
}

export function forwardHttp(
  request: ClientRequest,
  response: ClientResponse,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
): void {
  const started = performance.now();
  const startedAt = new Date();
  const requestTap = new BodyTap(context.bodyCap);
  const responseTap = new BodyTap(context.bodyCap);
  const timings = { connect: -1, tls: -1, send: 0, wait: 0, receive: 0 };
  const secure = target.protocol === 'https:';
  let upstreamTls: Record<string, unknown> | undefined;
  let requestSentAt = started;
  let firstByteAt = started;
  const base = {
    method: request.method ?? 'GET',
    scheme: secure ? 'https' : 'http',
    host: target.hostname,
    port: Number(target.port || (secure ? 443 : 80)),
    path: target.pathname,
    query: target.search.replace(/^\?/, ''),
    url: target.href,
    httpVersion: `HTTP/${request.httpVersion}`,
    requestHeaders: headerPairs(request.rawHeaders),
    ...connectionFields(info),
  };

  let finished = false;
  /** The origin's answer arrived in full (after that, a client hang-up is the client's own). */
  let originDone = false;
  const finish = (kind: Capture['kind'], extra: Record<string, unknown>) => {
    if (finished) return;
    finished = true;
    context.deliver({
      request_id: randomUUID(),
      ts: startedAt.toISOString(),
      kind,
      device_uuid: info.attribution.deviceUuid,
      payload: {
        ...base,
        ...(upstreamTls ? { upstreamTls } : {}),
        requestBody: requestTap.result(
          request.headers['content-type'],
          request.headers['content-encoding'],
        ),
        timings: { ...timings, total: roundedSince(started) },
        ...extra,
      },
    });
  };
  /** Answers 502 (or cuts a response already under way) and captures why. */
  const fail = (reason: string, extra: Record<string, unknown> = {}) => {
    try {
      if (response.headersSent) throw new Error('too late for a 502');
      const headers = { 'content-type': 'application/json' };
      if (request.httpVersionMajor === 2) (response as Http2ServerResponse).writeHead(502, headers);
      // The reason phrase is explicit: a refused writeHead leaves the origin's one behind.
      else (response as ServerResponse).writeHead(502, 'Bad Gateway', headers);
      response.end(JSON.stringify({ error: 'bad_gateway', message: reason }));
    } catch {
      // An answer already under way, or a client already gone (a reset HTTP/2 stream): cut it.
      response.destroy();
    }
    finish('error', { statusCode: 502, error: reason, ...extra });
  };

  const upstream = requestUpstream(request, target, info, context);
  upstream.on('socket', (socket) => {
    if (!socket.connecting) {
      timings.connect = 0; // a kept-alive connection
      return;
    }
    socket.once('connect', () => {
      timings.connect = roundedSince(started);
    });
    socket.once('secureConnect', () => {
      timings.tls = Math.round((roundedSince(started) - timings.connect) * 100) / 100;
      const tlsSocket = socket as TLSSocket;
      upstreamTls = {
        version: tlsSocket.getProtocol(),
        cipher: tlsSocket.getCipher()?.standardName ?? null,
        authorized: tlsSocket.authorized,
      };
    });
  });
  // The origin agreed to take the body: tell the client (RFC 9110 §10.1.1).
  // A 101 to a request that asked for no upgrade: Node would drop the socket without a word.
  upstream.on('upgrade', (upgraded, socket: Duplex) => {
    socket.destroy();
    fail('the origin switched protocols on a request that did not ask to', {
      upstreamStatus: upgraded.statusCode,
      responseHeaders: headerPairs(upgraded.rawHeaders),
    });
  });
  upstream.on('continue', () => {
    if ('writeContinue' in response) response.writeContinue();
  });
  upstream.on('finish', () => {
    requestSentAt = performance.now();
    timings.send = roundedSince(started);
  });
  upstream.on('response', (upstreamResponse) => {
    firstByteAt = performance.now();
    timings.wait = Math.round((firstByteAt - requestSentAt) * 100) / 100;
    try {
      if (request.httpVersionMajor === 2) {
        (response as Http2ServerResponse).writeHead(
          upstreamResponse.statusCode ?? 502,
          http2ResponseHeaders(forwardedHeaders(upstreamResponse.rawHeaders)),
        );
      } else {
        (response as ServerResponse).writeHead(
          upstreamResponse.statusCode ?? 502,
          upstreamResponse.statusMessage,
          forwardedHeaders(upstreamResponse.rawHeaders),
        );
      }
    } catch (error) {
      // A status or header the client's protocol cannot carry (status 099, a control character
      // in the reason phrase, …): the origin's answer is refused, never a crash.
      upstreamResponse.destroy();
      fail(`the origin's response cannot be relayed: ${(error as Error).message}`, {
        statusCode: 502,
        upstreamStatus: upstreamResponse.statusCode,
        responseHeaders: headerPairs(upstreamResponse.rawHeaders),
      });
      return;
    }
    upstreamResponse.on('data', (chunk: Buffer) => responseTap.push(chunk));
    upstreamResponse.pipe(response as NodeJS.WritableStream);
    // The origin hung up before its body was complete: the client must not wait for the rest.
    upstreamResponse.on('close', () => {
      if (upstreamResponse.complete) return;
      fail(`upstream ${target.host} closed the connection mid-response`, {
        upstreamStatus: upstreamResponse.statusCode,
        responseHeaders: headerPairs(upstreamResponse.rawHeaders),
        sizes: { requestBody: requestTap.size, responseBody: responseTap.size },
      });
    });
    upstreamResponse.on('end', () => {
      originDone = true;
      timings.receive = roundedSince(firstByteAt);
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
    fail(
      `upstream ${target.host} unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
    );
  });
  // A client that goes away before the origin's answer is complete (an HTTP/1.1 hang-up, an
  // HTTP/2 stream reset) takes the upstream request with it, and the exchange is captured.
  // (An HTTP/2 response reports itself finished after a reset, so the origin side decides.)
  response.on('close', () => {
    if (originDone) return;
    upstream.destroy();
    finish('error', {
      error: 'the client went away before the answer was complete',
      sizes: { requestBody: requestTap.size, responseBody: responseTap.size },
    });
  });

  if (request.headers.expect?.toLowerCase() === '100-continue') upstream.flushHeaders();
  request.on('data', (chunk: Buffer) => requestTap.push(chunk));
  request.pipe(upstream);
}
