// An exchange a breakpoint pattern matched (docs/proxy.md "Breakpoints"). A request-phase match
// holds the request before anything goes to the origin: its body is read whole (up to the capture
// cap; a bigger one is not held and streams on), the hold decides, and the request goes on as
// released, modified, or not at all. A response-phase match is planned here and held by
// hold-response.ts once the origin has answered.
import { randomUUID } from 'node:crypto';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Readable } from 'node:stream';
import { abortAnswer, answerHeldFailure } from '../breakpoints/abort-answer.ts';
import type { Breakpoints } from '../breakpoints/breakpoints.ts';
import {
  applyEdit,
  editedMethod,
  editedUrl,
  ModifiedMessageError,
} from '../breakpoints/modified-message.ts';
import type { BreakpointPattern } from '../breakpoints/patterns.ts';
import { BodyTap } from '../capture/body-tap.ts';
import { connectionFields } from '../capture/capture.ts';
import { elapsedMs } from '../capture/timings.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import type {
  ClientRequest,
  ClientResponse,
  ExchangePlan,
  ForwardContext,
  HeldRequest,
} from './forward-context.ts';
import { forwardToHttp1Origin } from './forward-http1.ts';
import { forwardToHttp2Origin } from './forward-http2.ts';
import { headerPairs } from './raw-headers.ts';
import { readHeldBody } from './read-held-body.ts';
import { upstreamServername } from './request-upstream.ts';

export async function forwardHeld(
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
    forwardToHttp1Origin(request, response, target, info, context, plan);
    return;
  }
  const controller = new AbortController();
  response.once('close', () => controller.abort());
  const started = performance.now();
  const startedAt = new Date();
  const method = request.method ?? 'GET';
  // The body is read before the hold: a client waiting for 100 Continue is told to send it.
  if (request.headers.expect?.toLowerCase() === '100-continue' && 'writeContinue' in response) {
    response.writeContinue();
  }
  const read = await readHeldBody(request as Readable, context.bodyCap);
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
    forwardToHttp1Origin(request, response, target, info, context, plan);
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
          total: elapsedMs(started),
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
        servername: upstreamServername(info.tls?.sni, hostname),
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
  forwardToHttp1Origin(request, response, held.url, info, context, plan);
}
