// One exchange from an intercepted HTTP/2 client to an HTTP/2 origin (docs/proxy.md "What
// happens to a request", Interception): the request's headers as HTTP/2 carries them
// (connection-specific fields dropped, RFC 9113 §8.2.2; `te` kept only as `trailers`, which gRPC
// needs), both bodies streamed through with backpressure and teed into the capture, the origin's
// trailers relayed (gRPC's `grpc-status` lives there), a reset on either side passed to the
// other. gRPC exchanges (content-type application/grpc) are captured with their service, method,
// status and the count and sizes of messages each way. A request released from a breakpoint goes
// the same way, its held (or modified) body sent whole.
import { randomUUID } from 'node:crypto';
import http2, {
  type ClientHttp2Session,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import type { BreakpointRecord } from '../breakpoints/breakpoints.ts';
import { BodyTap } from '../capture/body-tap.ts';
import { connectionFields } from '../capture/capture.ts';
import { GrpcFrameCounter } from '../capture/grpc-frames.ts';
import { elapsedMs } from '../capture/timings.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import type { ForwardContext, HeldRequest } from './forward-context.ts';
import { headerPairs } from './raw-headers.ts';

/** A request a breakpoint held and released: sent as it now is, captured with its records. */
export interface HeldHttp2Request {
  requestId: string;
  records: BreakpointRecord[];
  request: HeldRequest;
}

/** Fields HTTP/2 forbids or that concern one hop only (RFC 9113 §8.2.2, RFC 9110 §7.6.1). */
const CONNECTION_SPECIFIC = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'transfer-encoding',
  'upgrade',
  'host',
  'http2-settings',
]);

function copyHeaders(headers: IncomingHttpHeaders, skipPseudo = true): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || (skipPseudo && name.startsWith(':'))) continue;
    if (CONNECTION_SPECIFIC.has(name)) continue;
    if (name === 'te' && String(value).trim().toLowerCase() !== 'trailers') continue;
    out[name] = value;
  }
  return out;
}

/** The held request's headers as HTTP/2 sends them: its own length, whatever the client sent. */
function heldHeaders(held: HeldRequest): OutgoingHttpHeaders {
  const received: IncomingHttpHeaders = {};
  for (let index = 0; index + 1 < held.rawHeaders.length; index += 2) {
    const name = (held.rawHeaders[index] as string).toLowerCase();
    const value = held.rawHeaders[index + 1] as string;
    if (name === 'content-length') continue;
    const before = received[name];
    received[name] = before === undefined ? value : [before, value].flat();
  }
  const headers = copyHeaders(received);
  if (held.body.length > 0) headers['content-length'] = held.body.length;
  return headers;
}

function pairsOf(headers: IncomingHttpHeaders): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) pairs.push([name, String(one)]);
  }
  return pairs;
}

/** grpc-message is percent-encoded (gRPC over HTTP/2, "Responses"). */
function grpcMessage(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  const text = String(value);
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function forwardToHttp2Origin(
  request: Http2ServerRequest,
  response: Http2ServerResponse,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
  session: ClientHttp2Session,
  held?: HeldHttp2Request,
): void {
  const started = performance.now();
  const startedAt = new Date();
  const requestTap = new BodyTap(context.bodyCap);
  const responseTap = new BodyTap(context.bodyCap);
  const contentType = String(
    (held ? heldHeaders(held.request)['content-type'] : request.headers['content-type']) ?? '',
  );
  const grpc = /^application\/grpc(\+|;|$)/i.test(contentType)
    ? { sent: new GrpcFrameCounter(), received: new GrpcFrameCounter() }
    : undefined;
  const timings = { connect: 0, tls: -1, send: 0, wait: 0, receive: 0 };
  let firstByteAt = started;
  let responseHeaders: IncomingHttpHeaders | undefined;
  let trailers: IncomingHttpHeaders | undefined;
  const base = {
    method: held?.request.method ?? request.method,
    scheme: 'https',
    host: target.hostname,
    port: Number(target.port || 443),
    path: target.pathname,
    query: target.search.replace(/^\?/, ''),
    url: target.href,
    httpVersion: 'HTTP/2.0',
    upstreamHttpVersion: 'HTTP/2.0',
    requestHeaders: headerPairs(held?.request.rawHeaders ?? request.rawHeaders),
    ...connectionFields(info),
  };
  let finished = false;
  let originDone = false;
  const finish = (kind: 'http' | 'error', extra: Record<string, unknown>) => {
    if (finished) return;
    finished = true;
    const status = responseHeaders?.[':status'];
    context.deliver({
      request_id: held?.requestId ?? randomUUID(),
      ts: startedAt.toISOString(),
      kind,
      device_uuid: info.attribution.deviceUuid,
      payload: {
        ...base,
        requestBody: requestTap.result(contentType || undefined, undefined),
        ...(responseHeaders
          ? {
              statusCode: Number(status),
              responseHeaders: pairsOf(responseHeaders),
              responseBody: responseTap.result(
                responseHeaders['content-type'] as string | undefined,
                responseHeaders['content-encoding'] as string | undefined,
              ),
            }
          : {}),
        ...(trailers ? { responseTrailers: pairsOf(trailers) } : {}),
        sizes: { requestBody: requestTap.size, responseBody: responseTap.size },
        timings: { ...timings, total: elapsedMs(started) },
        ...(grpc
          ? {
              grpc: {
                service: target.pathname.split('/')[1] ?? null,
                method: target.pathname.split('/')[2] ?? null,
                status: Number(
                  trailers?.['grpc-status'] ?? responseHeaders?.['grpc-status'] ?? Number.NaN,
                ),
                message: grpcMessage(
                  trailers?.['grpc-message'] ?? responseHeaders?.['grpc-message'],
                ),
                requestMessages: grpc.sent.summary(),
                responseMessages: grpc.received.summary(),
              },
            }
          : {}),
        ...(held && held.records.length > 0 ? { breakpoints: held.records } : {}),
        ...extra,
      },
    });
  };

  const upstream = session.request(
    {
      ...(held ? heldHeaders(held.request) : copyHeaders(request.headers)),
      ':method': base.method,
      ':path': `${target.pathname}${target.search}`,
      ':authority': held ? target.host : (request.headers[':authority'] ?? target.host),
      ':scheme': 'https',
    },
    { endStream: held ? held.request.body.length === 0 : request.stream.endAfterHeaders },
  );
  const fail = (reason: string) => {
    try {
      if (response.headersSent) throw new Error('too late for a 502');
      response.writeHead(502, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'bad_gateway', message: reason }));
    } catch {
      response.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
    finish('error', { ...(responseHeaders ? {} : { statusCode: 502 }), error: reason });
  };
  upstream.on('response', (headers, flags) => {
    firstByteAt = performance.now();
    timings.wait = elapsedMs(started);
    responseHeaders = headers;
    const endsStream = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
    try {
      if (endsStream) {
        // Headers that end the stream (gRPC's "Trailers-Only" answer, how errors come): sent as
        // one HEADERS frame with END_STREAM, as received. (The compatibility layer's writeHead
        // then end() lost grpc-status here: the client saw only a reset.)
        originDone = true;
        upstream.unpipe(response as unknown as NodeJS.WritableStream);
        response.stream.respond(
          { ':status': Number(headers[':status']), ...copyHeaders(headers) },
          { endStream: true },
        );
        finish('http', {});
        return;
      }
      response.writeHead(Number(headers[':status']), copyHeaders(headers));
    } catch (error) {
      upstream.close(http2.constants.NGHTTP2_CANCEL);
      fail(`the origin's response cannot be relayed: ${(error as Error).message}`);
    }
  });
  upstream.on('trailers', (received) => {
    trailers = received;
    response.addTrailers(copyHeaders(received));
  });
  upstream.on('data', (chunk: Buffer) => {
    responseTap.push(chunk);
    grpc?.received.push(chunk);
  });
  upstream.pipe(response as unknown as NodeJS.WritableStream);
  upstream.on('end', () => {
    originDone = true;
    timings.receive = elapsedMs(firstByteAt);
    finish('http', {});
  });
  upstream.on('error', (error) => {
    fail(
      `upstream ${target.host} failed: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
    );
  });
  // The origin reset the stream (RST_STREAM) without an error event: the client sees a reset too.
  upstream.on('close', () => {
    if (originDone || finished) return;
    const code = upstream.rstCode ?? 0;
    if (!response.headersSent) {
      fail(`upstream ${target.host} closed the stream (code ${code})`);
      return;
    }
    response.stream.close(code || http2.constants.NGHTTP2_INTERNAL_ERROR);
    finish('error', { error: `upstream ${target.host} reset the stream (code ${code})` });
  });
  response.on('close', () => {
    if (originDone) return;
    upstream.close(http2.constants.NGHTTP2_CANCEL);
    finish('error', { error: 'the client went away before the answer was complete' });
  });
  if (held) {
    // The client's body was read whole before the hold: this is all there is to send.
    requestTap.push(held.request.body);
    grpc?.sent.push(held.request.body);
    if (held.request.body.length > 0) upstream.end(held.request.body);
    timings.send = elapsedMs(started);
    return;
  }
  request.on('data', (chunk: Buffer) => {
    requestTap.push(chunk);
    grpc?.sent.push(chunk);
  });
  request.on('end', () => {
    timings.send = elapsedMs(started);
  });
  if (!request.stream.endAfterHeaders) request.pipe(upstream);
}
