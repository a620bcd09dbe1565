// Forwarding one exchange (002 §4.3): absolute-form HTTP, origin-form HTTP inside a tunnel, and
// decrypted HTTPS (HTTP/1.1 or HTTP/2 from the client; an HTTP/2 client's requests go to an
// origin that offers HTTP/2 over HTTP/2, forward-http2.ts, everything else over HTTP/1.1). The request
// streams to the origin and the response streams back, each teed into a bounded capture; the
// exchange becomes one capture. An unreachable origin answers 502 with a reason and is captured
// as kind `error`. `Expect: 100-continue` is relayed: the client gets 100 when the origin sends it.
// An exchange matching a breakpoint pattern (issue 19) is held before it goes to the origin
// (request phase) or before its answer goes to the client (response phase): its body is read in
// full (up to the capture cap; a bigger one is not held), the hold decides, and what was sent
// goes on. Without a pattern set anywhere the streaming path is unchanged.
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { BreakpointRecord, Breakpoints, Outcome } from '../breakpoints/breakpoints.ts';
import {
  applyEdit,
  type EditableMessage,
  editedMethod,
  editedStatus,
  editedUrl,
  ModifiedMessageError,
} from '../breakpoints/modified-message.ts';
import type { BreakpointPattern } from '../breakpoints/patterns.ts';
import { BodyTap } from '../capture/body-tap.ts';
import { type Capture, connectionFields } from '../capture/capture.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import { forwardToHttp2Origin } from './forward-http2.ts';
import type { Http2Origins } from './http2-origins.ts';

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
  /** Breakpoint patterns and holds (issue 19); none: nothing is ever held. */
  breakpoints?: Breakpoints;
  /** HTTP/2 sessions to origins for intercepted HTTP/2 clients (issue 19); none: HTTP/1.1. */
  http2Origins?: Http2Origins;
}

/** The request as a breakpoint let it go on: sent whole instead of streamed. */
export interface HeldRequest {
  method: string;
  url: URL;
  rawHeaders: string[];
  body: Buffer;
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
  held?: HeldRequest,
): http.ClientRequest {
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const hostname = target.hostname.replace(/^\[|\]$/g, '');
  let headers: string[];
  if (held) {
    // Sent whole: its own length, whatever framing the client used.
    headers = forwardedHeaders(held.rawHeaders, keep).filter((_, index, all) =>
      index % 2 === 1
        ? !/^(content-length|transfer-encoding)$/i.test(all[index - 1] as string)
        : !/^(content-length|transfer-encoding)$/i.test(all[index] as string),
    );
    if (!headers.some((name, index) => index % 2 === 0 && name.toLowerCase() === 'host')) {
      headers.unshift('host', held.url.host);
    }
    if (held.body.length > 0) headers.push('content-length', String(held.body.length));
  } else {
    headers = forwardedHeaders(request.rawHeaders, keep);
    // A body without a length (chunked from an HTTP/1.1 client, DATA frames from an HTTP/2 one)
    // goes on chunked: Node sends GET/DELETE/OPTIONS bodies unframed unless told to.
    if (request.headers['content-length'] === undefined && hasBody(request)) {
      headers.push('transfer-encoding', 'chunked');
    }
  }
  const port = Number(target.port || (secure ? 443 : 80));
  const options = {
    host: hostname,
    port,
    method: held?.method ?? request.method,
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

/** The first `cap` bytes of a body, and whether that was all of it (then the stream is done). */
function readBody(
  stream: Readable,
  cap: number,
): Promise<{ chunks: Buffer[]; size: number; complete: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (complete: boolean) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      resolve({ chunks, size, complete });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > cap) {
        stream.pause();
        done(false);
      }
    };
    const onEnd = () => done(true);
    // Gone before the end: what came is all there will be; the caller sees the client gone.
    const onClose = () => done(true);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
  });
}

interface ExchangePlan {
  requestId: string;
  /** The request as released from a request breakpoint (sent whole). */
  held?: HeldRequest;
  /** Request bytes already read from the client (a body too large to hold): sent first. */
  prefix?: Buffer[];
  /** Hold the answer before the client sees it. */
  holdResponse?: BreakpointPattern;
  records: BreakpointRecord[];
  signal?: AbortSignal;
}

export function forwardHttp(
  request: ClientRequest,
  response: ClientResponse,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
): void {
  const breakpoints = context.breakpoints;
  // Nothing set anywhere: one property read, then the streaming path.
  if (breakpoints?.active && info.attribution.deviceUuid) {
    const exchange = { method: request.method ?? 'GET', url: target };
    const device = info.attribution.deviceUuid;
    const onRequest = breakpoints.match(device, 'request', exchange);
    const onResponse = breakpoints.match(device, 'response', exchange);
    if (onRequest || onResponse) {
      void forwardHeld(
        request,
        response,
        target,
        info,
        context,
        breakpoints,
        onRequest,
        onResponse,
      );
      return;
    }
  }
  const origins = context.http2Origins;
  if (origins && request.httpVersionMajor === 2 && target.protocol === 'https:') {
    const hostname = target.hostname.replace(/^\[|\]$/g, '');
    const port = Number(target.port || 443);
    origins.session({ host: hostname, port, servername: info.tls?.sni ?? hostname }).then(
      (session) => {
        if (session) {
          forwardToHttp2Origin(
            request as Http2ServerRequest,
            response as Http2ServerResponse,
            target,
            info,
            context,
            session,
          );
        } else {
          runExchange(request, response, target, info, context, {
            requestId: randomUUID(),
            records: [],
          });
        }
      },
      // Unreachable over TLS at all: the HTTP/1.1 path answers 502 and captures why.
      () =>
        runExchange(request, response, target, info, context, {
          requestId: randomUUID(),
          records: [],
        }),
    );
    return;
  }
  runExchange(request, response, target, info, context, { requestId: randomUUID(), records: [] });
}

/** The answer to a client whose exchange a breakpoint ended. */
function answerHeldFailure(
  request: ClientRequest,
  response: ClientResponse,
  status: number,
  body: object,
): void {
  try {
    const headers = { 'content-type': 'application/json', 'x-capture-breakpoint': 'aborted' };
    if (request.httpVersionMajor === 2)
      (response as Http2ServerResponse).writeHead(status, headers);
    else (response as ServerResponse).writeHead(status, headers);
    response.end(JSON.stringify(body));
  } catch {
    response.destroy();
  }
}

/** What a held exchange that did not go on answers: status, body, and the capture's error. */
export function abortAnswer(
  outcome: Extract<Outcome, { resolution: 'abort' }>,
  eventId: number | null,
  phase: string,
): { status: number; body: { error: string; message: string } } {
  if (outcome.closedByProxy === 'proxy_stopped' || outcome.closedByProxy === 'proxy_restarted') {
    return {
      status: 503,
      body: {
        error: 'proxy_stopping',
        message: `the proxy stopped while this exchange was held at a ${phase} breakpoint (event ${eventId})`,
      },
    };
  }
  // A deleted held row is an abort too (nobody can resume it any more); the message says why.
  return {
    status: 502,
    body: {
      error: 'breakpoint_aborted',
      message: outcome.eventDeleted
        ? `the exchange was aborted at a ${phase} breakpoint: its event ${eventId} was deleted`
        : `the exchange was aborted at a ${phase} breakpoint (event ${eventId})`,
    },
  };
}

async function forwardHeld(
  request: ClientRequest,
  response: ClientResponse,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
  breakpoints: Breakpoints,
  onRequest: BreakpointPattern | undefined,
  onResponse: BreakpointPattern | undefined,
): Promise<void> {
  const plan: ExchangePlan = { requestId: randomUUID(), records: [], holdResponse: onResponse };
  if (!onRequest) {
    runExchange(request, response, target, info, context, plan);
    return;
  }
  const controller = new AbortController();
  plan.signal = controller.signal;
  response.once('close', () => controller.abort());
  const started = performance.now();
  const startedAt = new Date();
  const method = request.method ?? 'GET';
  // The body is read before the hold: a client waiting for 100 Continue is told to send it.
  if (request.headers.expect?.toLowerCase() === '100-continue' && 'writeContinue' in response) {
    response.writeContinue();
  }
  const read = await readBody(request as Readable, context.bodyCap);
  if (!read.complete) {
    plan.prefix = read.chunks;
    plan.records.push({
      eventId: null,
      phase: 'request',
      pattern: onRequest.source,
      heldMs: 0,
      resolution: null,
      notHeld: 'body_too_large',
    });
    runExchange(request, response, target, info, context, plan);
    return;
  }
  const body = Buffer.concat(read.chunks);
  const tap = new BodyTap(context.bodyCap);
  tap.push(body);
  const base = {
    method,
    scheme: target.protocol === 'https:' ? 'https' : 'http',
    host: target.hostname,
    port: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
    path: target.pathname,
    query: target.search.replace(/^\?/, ''),
    url: target.href,
    httpVersion: `HTTP/${request.httpVersion}`,
    requestHeaders: headerPairs(request.rawHeaders),
  };
  const requestBody = tap.result(
    request.headers['content-type'],
    request.headers['content-encoding'],
  );
  const { outcome, record } = await breakpoints.hold({
    deviceUuid: info.attribution.deviceUuid as string,
    requestId: plan.requestId,
    phase: 'request',
    pattern: onRequest,
    method,
    url: target.href,
    message: { ...base, requestBody },
    signal: controller.signal,
  });
  plan.records.push(record);
  const failed = (status: number | null, error: string) =>
    context.deliver({
      request_id: plan.requestId,
      ts: startedAt.toISOString(),
      kind: 'error',
      device_uuid: info.attribution.deviceUuid,
      payload: {
        ...base,
        ...connectionFields(info),
        requestBody,
        ...(status ? { statusCode: status } : {}),
        error,
        breakpoints: plan.records,
        timings: {
          connect: -1,
          tls: -1,
          send: 0,
          wait: 0,
          receive: 0,
          total: roundedSince(started),
        },
      },
    });
  if (controller.signal.aborted && outcome.resolution !== 'abort') {
    failed(null, 'the client went away while the exchange was held');
    return;
  }
  if (outcome.resolution === 'abort') {
    if (outcome.closedByProxy === 'client_gone') {
      failed(null, 'the client went away while the exchange was held');
      return;
    }
    const answer = abortAnswer(outcome, record.eventId, 'request');
    answerHeldFailure(request, response, answer.status, answer.body);
    failed(answer.status, answer.body.message);
    return;
  }
  let held: HeldRequest = { method, url: target, rawHeaders: request.rawHeaders, body };
  if (outcome.resolution === 'modify') {
    try {
      const edited = applyEdit(held, outcome.message);
      held = {
        method: editedMethod(outcome.message, method),
        url: editedUrl(outcome.message, target),
        ...edited,
      };
    } catch (error) {
      if (!(error instanceof ModifiedMessageError)) throw error;
      const message = `the breakpoint's modified request cannot be sent: ${error.message}`;
      answerHeldFailure(request, response, 502, { error: 'breakpoint_modify_invalid', message });
      failed(502, message);
      return;
    }
  }
  plan.held = held;
  // An HTTP/2 client's released request goes over the origin's HTTP/2 session when it has one
  // (gRPC servers speak nothing else, and gRPC needs the response trailers relayed). A response
  // breakpoint still takes the HTTP/1.1 path: only it reads and holds the answer.
  const origins = context.http2Origins;
  if (
    origins &&
    !plan.holdResponse &&
    request.httpVersionMajor === 2 &&
    held.url.protocol === 'https:'
  ) {
    const hostname = held.url.hostname.replace(/^\[|\]$/g, '');
    const session = await origins
      .session({
        host: hostname,
        port: Number(held.url.port || 443),
        servername: info.tls?.sni ?? hostname,
      })
      .catch(() => undefined);
    if (session) {
      forwardToHttp2Origin(
        request as Http2ServerRequest,
        response as Http2ServerResponse,
        held.url,
        info,
        context,
        session,
        { requestId: plan.requestId, records: plan.records, request: held },
      );
      return;
    }
  }
  runExchange(request, response, held.url, info, context, plan);
}

function runExchange(
  request: ClientRequest,
  response: ClientResponse,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
  plan: ExchangePlan,
): void {
  const started = performance.now();
  const startedAt = new Date();
  const requestTap = new BodyTap(context.bodyCap);
  let responseTap = new BodyTap(context.bodyCap);
  const timings = { connect: -1, tls: -1, send: 0, wait: 0, receive: 0 };
  const secure = target.protocol === 'https:';
  let upstreamTls: Record<string, unknown> | undefined;
  let requestSentAt = started;
  let firstByteAt = started;
  const sentHeaders = plan.held?.rawHeaders ?? request.rawHeaders;
  const base = {
    method: plan.held?.method ?? request.method ?? 'GET',
    scheme: secure ? 'https' : 'http',
    host: target.hostname,
    port: Number(target.port || (secure ? 443 : 80)),
    path: target.pathname,
    query: target.search.replace(/^\?/, ''),
    url: target.href,
    httpVersion: `HTTP/${request.httpVersion}`,
    requestHeaders: headerPairs(sentHeaders),
    ...connectionFields(info),
  };
  const requestContentType = () =>
    plan.held ? headerValue(plan.held.rawHeaders, 'content-type') : request.headers['content-type'];
  const requestContentEncoding = () =>
    plan.held
      ? headerValue(plan.held.rawHeaders, 'content-encoding')
      : request.headers['content-encoding'];

  let finished = false;
  /** The origin's answer arrived in full (after that, a client hang-up is the client's own). */
  let originDone = false;
  const finish = (kind: Capture['kind'], extra: Record<string, unknown>) => {
    if (finished) return;
    finished = true;
    context.deliver({
      request_id: plan.requestId,
      ts: startedAt.toISOString(),
      kind,
      device_uuid: info.attribution.deviceUuid,
      payload: {
        ...base,
        ...(upstreamTls ? { upstreamTls } : {}),
        requestBody: requestTap.result(requestContentType(), requestContentEncoding()),
        timings: { ...timings, total: roundedSince(started) },
        ...(plan.records.length > 0 ? { breakpoints: plan.records } : {}),
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

  const upstream = requestUpstream(request, target, info, context, undefined, plan.held);
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
  /** The head to the client; false when its protocol cannot carry it (then answered 502). */
  const writeHead = (
    upstreamResponse: IncomingMessage,
    status: number,
    statusMessage: string | undefined,
    rawHeaders: string[],
  ): boolean => {
    try {
      if (request.httpVersionMajor === 2) {
        (response as Http2ServerResponse).writeHead(
          status,
          http2ResponseHeaders(forwardedHeaders(rawHeaders)),
        );
      } else {
        (response as ServerResponse).writeHead(status, statusMessage, forwardedHeaders(rawHeaders));
      }
      return true;
    } catch (error) {
      // A status or header the client's protocol cannot carry (status 099, a control character
      // in the reason phrase, …): the origin's answer is refused, never a crash.
      upstreamResponse.destroy();
      fail(`the origin's response cannot be relayed: ${(error as Error).message}`, {
        statusCode: 502,
        upstreamStatus: upstreamResponse.statusCode,
        responseHeaders: headerPairs(upstreamResponse.rawHeaders),
      });
      return false;
    }
  };
  const streamResponse = (upstreamResponse: IncomingMessage, prefix: Buffer[] = []) => {
    if (
      !writeHead(
        upstreamResponse,
        upstreamResponse.statusCode ?? 502,
        upstreamResponse.statusMessage,
        upstreamResponse.rawHeaders,
      )
    )
      return;
    for (const chunk of prefix) {
      responseTap.push(chunk);
      (response as NodeJS.WritableStream).write(chunk);
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
  };
  upstream.on('response', (upstreamResponse) => {
    firstByteAt = performance.now();
    timings.wait = Math.round((firstByteAt - requestSentAt) * 100) / 100;
    if (plan.holdResponse && context.breakpoints) {
      void holdResponse(upstreamResponse, plan.holdResponse, context.breakpoints);
      return;
    }
    streamResponse(upstreamResponse);
  });

  /** The answer read whole, held, then sent as the breakpoint decides. */
  const holdResponse = async (
    upstreamResponse: IncomingMessage,
    pattern: BreakpointPattern,
    breakpoints: Breakpoints,
  ) => {
    const read = await readBody(upstreamResponse, context.bodyCap);
    if (!read.complete) {
      plan.records.push({
        eventId: null,
        phase: 'response',
        pattern: pattern.source,
        heldMs: 0,
        resolution: null,
        notHeld: 'body_too_large',
      });
      streamResponse(upstreamResponse, read.chunks);
      return;
    }
    if (!upstreamResponse.complete) {
      fail(`upstream ${target.host} closed the connection mid-response`, {
        upstreamStatus: upstreamResponse.statusCode,
      });
      return;
    }
    originDone = true;
    timings.receive = roundedSince(firstByteAt);
    const body = Buffer.concat(read.chunks);
    const tap = new BodyTap(context.bodyCap);
    tap.push(body);
    const responseFields = {
      statusCode: upstreamResponse.statusCode,
      statusText: upstreamResponse.statusMessage,
      responseHeaders: headerPairs(upstreamResponse.rawHeaders),
      responseBody: tap.result(
        upstreamResponse.headers['content-type'],
        upstreamResponse.headers['content-encoding'],
      ),
    };
    const controller = new AbortController();
    const onClose = () => controller.abort();
    response.once('close', onClose);
    const { outcome, record } = await breakpoints.hold({
      deviceUuid: info.attribution.deviceUuid as string,
      requestId: plan.requestId,
      phase: 'response',
      pattern,
      method: base.method,
      url: target.href,
      message: {
        method: base.method,
        url: base.url,
        host: base.host,
        path: base.path,
        query: base.query,
        requestHeaders: base.requestHeaders,
        ...responseFields,
      },
      signal: controller.signal,
    });
    response.off('close', onClose);
    plan.records.push(record);
    const sizes = { requestBody: requestTap.size, responseBody: body.length };
    if (outcome.resolution === 'abort' || controller.signal.aborted) {
      if (outcome.resolution !== 'abort' || outcome.closedByProxy === 'client_gone') {
        finish('error', {
          ...responseFields,
          error: 'the client went away while the answer was held',
          sizes,
        });
        return;
      }
      const answer = abortAnswer(outcome, record.eventId, 'response');
      answerHeldFailure(request, response, answer.status, answer.body);
      finish('error', {
        upstreamStatus: upstreamResponse.statusCode,
        statusCode: answer.status,
        error: answer.body.message,
        sizes,
      });
      return;
    }
    let status = upstreamResponse.statusCode ?? 502;
    let statusMessage = upstreamResponse.statusMessage;
    let sent: EditableMessage = { rawHeaders: upstreamResponse.rawHeaders, body };
    if (outcome.resolution === 'modify') {
      try {
        sent = applyEdit(sent, outcome.message);
        const edited = editedStatus(outcome.message, status);
        if (edited !== status) statusMessage = undefined;
        status = edited;
      } catch (error) {
        if (!(error instanceof ModifiedMessageError)) throw error;
        fail(`the breakpoint's modified response cannot be sent: ${error.message}`, {
          upstreamStatus: upstreamResponse.statusCode,
        });
        return;
      }
    }
    if (!writeHead(upstreamResponse, status, statusMessage, sent.rawHeaders)) return;
    response.end(sent.body);
    responseTap = new BodyTap(context.bodyCap);
    responseTap.push(sent.body);
    finish('http', {
      statusCode: status,
      statusText: statusMessage ?? http.STATUS_CODES[status],
      responseHeaders: headerPairs(sent.rawHeaders),
      responseBody: responseTap.result(
        headerValue(sent.rawHeaders, 'content-type'),
        headerValue(sent.rawHeaders, 'content-encoding'),
      ),
      ...(outcome.resolution === 'modify' ? { upstreamStatus: upstreamResponse.statusCode } : {}),
      sizes: { requestBody: requestTap.size, responseBody: sent.body.length },
    });
  };
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

  if (plan.held) {
    requestTap.push(plan.held.body);
    upstream.end(plan.held.body);
    return;
  }
  if (request.headers.expect?.toLowerCase() === '100-continue') upstream.flushHeaders();
  for (const chunk of plan.prefix ?? []) {
    requestTap.push(chunk);
    upstream.write(chunk);
  }
  request.on('data', (chunk: Buffer) => requestTap.push(chunk));
  request.pipe(upstream);
}

/** The first value of a header in a flat raw list. */
function headerValue(raw: string[], name: string): string | undefined {
  for (let index = 0; index + 1 < raw.length; index += 2) {
    if ((raw[index] as string).toLowerCase() === name) return raw[index + 1];
  }
  return undefined;
}
