// A response-phase breakpoint (docs/proxy.md "Breakpoints"): the origin's answer is read whole
// (up to the capture cap; a bigger one streams on unheld), held before the client sees anything,
// then sent unchanged, sent as modified, or replaced by the abort answer. The HTTP/1.1 exchange
// it belongs to (forward-http1.ts) lends it the means to answer and to capture.
import http, { type IncomingMessage } from 'node:http';
import { abortAnswer, answerHeldFailure } from '../breakpoints/abort-answer.ts';
import type { Breakpoints } from '../breakpoints/breakpoints.ts';
import {
  applyEdit,
  type EditableMessage,
  editedStatus,
  ModifiedMessageError,
} from '../breakpoints/modified-message.ts';
import type { BreakpointPattern } from '../breakpoints/patterns.ts';
import { BodyTap } from '../capture/body-tap.ts';
import type { Capture } from '../capture/capture.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import type { ClientRequest, ClientResponse, ExchangePlan } from './forward-context.ts';
import { headerPairs, headerValue } from './raw-headers.ts';
import { readHeldBody } from './read-held-body.ts';

/** What the HTTP/1.1 exchange lends a response hold. */
export interface ResponseHoldExchange {
  request: ClientRequest;
  response: ClientResponse;
  target: URL;
  info: ConnectionInfo;
  plan: ExchangePlan;
  bodyCap: number;
  /** The request as sent, in the capture's shape: what the held row's message repeats. */
  requestFields: {
    method: string;
    url: string;
    host: string;
    path: string;
    query: string;
    requestHeaders: Array<[string, string]>;
  };
  requestBodySize(): number;
  /** The origin's answer is all read: from here a client hang-up is the client's own. */
  originAnswered(): void;
  /** Streams the answer on unheld, `prefix` (bytes already read) first. */
  streamResponse(upstreamResponse: IncomingMessage, prefix: Buffer[]): void;
  /** The head to the client; false when its protocol cannot carry it (then answered 502). */
  writeHead(
    upstreamResponse: IncomingMessage,
    status: number,
    statusMessage: string | undefined,
    rawHeaders: string[],
  ): boolean;
  /** Answers 502 (or cuts a response already under way) and captures why. */
  fail(reason: string, extra?: Record<string, unknown>): void;
  /** Captures the exchange (once). */
  finish(kind: Capture['kind'], extra: Record<string, unknown>): void;
}

/** The answer read whole, held, then sent as the breakpoint decides. */
export async function holdResponse(
  upstreamResponse: IncomingMessage,
  pattern: BreakpointPattern,
  breakpoints: Breakpoints,
  exchange: ResponseHoldExchange,
): Promise<void> {
  const { request, response, target, plan, requestFields: base } = exchange;
  const read = await readHeldBody(upstreamResponse, exchange.bodyCap);
  if (!read.complete) {
    plan.records.push({
      eventId: null,
      phase: 'response',
      pattern: pattern.source,
      heldMs: 0,
      resolution: null,
      notHeld: 'body_too_large',
    });
    exchange.streamResponse(upstreamResponse, read.chunks);
    return;
  }
  if (!upstreamResponse.complete) {
    exchange.fail(`upstream ${target.host} closed the connection mid-response`, {
      upstreamStatus: upstreamResponse.statusCode,
    });
    return;
  }
  exchange.originAnswered();
  const body = Buffer.concat(read.chunks);
  const tap = new BodyTap(exchange.bodyCap);
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
    deviceUuid: exchange.info.attribution.deviceUuid as string,
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
  const sizes = { requestBody: exchange.requestBodySize(), responseBody: body.length };
  if (outcome.resolution === 'abort' || controller.signal.aborted) {
    if (outcome.resolution !== 'abort' || outcome.closedByProxy === 'client_gone') {
      exchange.finish('error', {
        ...responseFields,
        error: 'the client went away while the answer was held',
        sizes,
      });
      return;
    }
    const answer = abortAnswer(outcome, record.eventId, 'response');
    answerHeldFailure(request, response, answer.status, answer.body);
    exchange.finish('error', {
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
      exchange.fail(`the breakpoint's modified response cannot be sent: ${error.message}`, {
        upstreamStatus: upstreamResponse.statusCode,
      });
      return;
    }
  }
  if (!exchange.writeHead(upstreamResponse, status, statusMessage, sent.rawHeaders)) return;
  response.end(sent.body);
  const sentTap = new BodyTap(exchange.bodyCap);
  sentTap.push(sent.body);
  exchange.finish('http', {
    statusCode: status,
    statusText: statusMessage ?? http.STATUS_CODES[status],
    responseHeaders: headerPairs(sent.rawHeaders),
    responseBody: sentTap.result(
      headerValue(sent.rawHeaders, 'content-type'),
      headerValue(sent.rawHeaders, 'content-encoding'),
    ),
    ...(outcome.resolution === 'modify' ? { upstreamStatus: upstreamResponse.statusCode } : {}),
    sizes: { requestBody: exchange.requestBodySize(), responseBody: sent.body.length },
  });
}
