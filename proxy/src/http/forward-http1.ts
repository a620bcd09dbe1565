// One exchange to the origin over HTTP/1.1 (docs/proxy.md "What happens to a request"), whatever
// the client spoke: the request streams to the origin and the response streams back, each teed
// into a bounded capture, and the exchange becomes one capture. An unreachable origin answers
// 502 with a reason and is captured as kind `error`; `Expect: 100-continue` is relayed (the
// client gets 100 when the origin sends it). The plan says what breakpoints decided before
// (a held request, sent whole) and whether the answer is held (hold-response.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { BodyTap } from '../capture/body-tap.ts';
import { type Capture, connectionFields } from '../capture/capture.ts';
import { elapsedMs } from '../capture/timings.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import type {
  ClientRequest,
  ClientResponse,
  ExchangePlan,
  ForwardContext,
} from './forward-context.ts';
import { holdResponse, type ResponseHoldExchange } from './hold-response.ts';
import { forwardedHeaders, headerPairs, headerValue, http2ResponseHeaders } from './raw-headers.ts';
import { requestUpstream } from './request-upstream.ts';

export function forwardToHttp1Origin(
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
  const responseTap = new BodyTap(context.bodyCap);
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
        timings: { ...timings, total: elapsedMs(started) },
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
      timings.connect = elapsedMs(started);
    });
    socket.once('secureConnect', () => {
      timings.tls = Math.round((elapsedMs(started) - timings.connect) * 100) / 100;
      const tlsSocket = socket as TLSSocket;
      upstreamTls = {
        version: tlsSocket.getProtocol(),
        cipher: tlsSocket.getCipher()?.standardName ?? null,
        authorized: tlsSocket.authorized,
      };
    });
  });
  // A 101 to a request that asked for no upgrade: Node would drop the socket without a word.
  upstream.on('upgrade', (upgraded, socket: Duplex) => {
    socket.destroy();
    fail('the origin switched protocols on a request that did not ask to', {
      upstreamStatus: upgraded.statusCode,
      responseHeaders: headerPairs(upgraded.rawHeaders),
    });
  });
  // The origin agreed to take the body: tell the client (RFC 9110 §10.1.1).
  upstream.on('continue', () => {
    if ('writeContinue' in response) response.writeContinue();
  });
  upstream.on('finish', () => {
    requestSentAt = performance.now();
    timings.send = elapsedMs(started);
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
      timings.receive = elapsedMs(firstByteAt);
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
      const exchange: ResponseHoldExchange = {
        request,
        response,
        target,
        info,
        plan,
        bodyCap: context.bodyCap,
        requestFields: base,
        requestBodySize: () => requestTap.size,
        originAnswered: () => {
          originDone = true;
          timings.receive = elapsedMs(firstByteAt);
        },
        streamResponse,
        writeHead,
        fail,
        finish,
      };
      void holdResponse(upstreamResponse, plan.holdResponse, context.breakpoints, exchange);
      return;
    }
    streamResponse(upstreamResponse);
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
