// What forwarding one exchange needs from the daemon, and the shapes the forwarding modules hand
// each other: forward-http.ts picks the path, forward-http1.ts and forward-http2.ts talk to the
// origin, forward-held.ts and hold-response.ts hold an exchange at a breakpoint.
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { BreakpointRecord, Breakpoints } from '../breakpoints/breakpoints.ts';
import type { BreakpointPattern } from '../breakpoints/patterns.ts';
import type { Capture } from '../capture/capture.ts';
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
  /** Breakpoint patterns and holds (docs/proxy.md "Breakpoints"); none: nothing is ever held. */
  breakpoints?: Breakpoints;
  /** HTTP/2 sessions to origins for intercepted HTTP/2 clients; none: HTTP/1.1 always. */
  http2Origins?: Http2Origins;
}

/** The client's side of an exchange, over HTTP/1.1 or HTTP/2. */
export type ClientRequest = IncomingMessage | Http2ServerRequest;
export type ClientResponse = ServerResponse | Http2ServerResponse;

/** The request as a breakpoint let it go on: sent whole instead of streamed. */
export interface HeldRequest {
  method: string;
  url: URL;
  rawHeaders: string[];
  body: Buffer;
}

/** How an HTTP/1.1 exchange runs (forward-http1.ts), as the breakpoints left it. */
export interface ExchangePlan {
  requestId: string;
  /** The request as released from a request breakpoint (sent whole). */
  held?: HeldRequest;
  /** Request bytes already read from the client (a body too large to hold): sent first. */
  prefix?: Buffer[];
  /** Hold the answer before the client sees it. */
  holdResponse?: BreakpointPattern;
  records: BreakpointRecord[];
}
