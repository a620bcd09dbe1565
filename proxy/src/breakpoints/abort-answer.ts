// What the client of a held exchange that did not go on is told (docs/proxy.md "Breakpoints"):
// 502 `breakpoint_aborted` (the row resumed as abort, or deleted), 503 `proxy_stopping` when the
// proxy stopped or restarted, or 502 `breakpoint_modify_invalid` for an edit that cannot be sent;
// always marked `x-capture-breakpoint: aborted`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Outcome } from './breakpoints.ts';

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

/** The answer to a client whose exchange a breakpoint ended. */
export function answerHeldFailure(
  request: IncomingMessage | Http2ServerRequest,
  response: ServerResponse | Http2ServerResponse,
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
