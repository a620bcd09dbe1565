// Where each request the shared servers parse goes, by kind (002 §4.3, §5; docs/proxy.md
// "Listeners"): origin-form requests and any naming the proxy are answered locally (management,
// PAC, set-up), never forwarded; absolute-form http:// is forwarded; CONNECT opens a tunnel;
// upgrades become WebSockets; requests inside a tunnel go to the tunnel's target. Outside a
// tunnel each passes the source allowlist, the destination policy and egress-gate.ts first.
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type http2 from 'node:http2';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { AddressList } from './address-list.ts';
import { type ConnectionInfo, connectionInfo, sessionInfo } from './connection-info.ts';
import type { DestinationPolicy } from './destination-policy.ts';
import {
  closeWithStatus,
  destinationRefusal,
  type EgressGate,
  refuseSocket,
  sendRefusal,
} from './egress-gate.ts';
import type { ForwardContext } from './http/forward-context.ts';
import { forwardHttp } from './http/forward-http.ts';
import { absoluteTarget, acceptableHost, tunnelTarget } from './http/request-target.ts';
import { openTunnel, type TunnelContext } from './http/tunnel.ts';
import { forwardUpgrade } from './http/websocket.ts';

export interface RoutingContext {
  allowlist: AddressList;
  destinations: DestinationPolicy;
  gate: EgressGate;
  /** The URL names the proxy itself: its domain, one of its listeners, the set-up host. */
  isOwn(url: URL): boolean;
  /** `proxied`: sent to us as its proxy (absolute-form or in a tunnel), not to our address. */
  answerLocally(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    host: string | undefined,
    proxied: boolean,
  ): void;
  forwarding: ForwardContext;
  tunnels: TunnelContext;
  logger: Logger;
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** Requests, CONNECTs, upgrades and malformed requests on the shared HTTP/1.1 server. */
export function routeHttp1Requests(server: http.Server, context: RoutingContext): void {
  const { allowlist, destinations, gate, forwarding, logger } = context;

  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    const raw = request.url ?? '/';
    const inTunnel = info.target;
    // Inside a tunnel the CONNECT fixed the destination (allowlist checked then); on a listener,
    // origin-form is addressed to the proxy itself and absolute-form is proxy traffic (002 §4.3).
    const url = inTunnel
      ? tunnelTarget(inTunnel, raw)
      : raw.startsWith('/')
        ? tunnelTarget({ host: 'proxy', port: 80, scheme: 'http' }, raw.replace(/^\/+/, '/'))
        : absoluteTarget(raw);
    if (!url) {
      request.resume();
      sendJson(response, 400, { error: 'bad_request', message: 'request target is not usable' });
      return;
    }
    if ((!inTunnel && raw.startsWith('/')) || context.isOwn(url)) {
      context.answerLocally(
        request,
        response,
        url.pathname,
        inTunnel || raw.startsWith('/') ? request.headers.host : url.host,
        Boolean(inTunnel) || !raw.startsWith('/'),
      );
      return;
    }
    if (!inTunnel) {
      if (!allowlist.allows(info.client.ip)) {
        request.resume();
        sendJson(response, 403, { error: 'forbidden', message: 'source address not allowed' });
        return;
      }
      if (!destinations.allows(url.hostname)) {
        request.resume();
        sendJson(response, 403, { error: 'forbidden', message: destinationRefusal(url.hostname) });
        return;
      }
      if (url.protocol !== 'http:') {
        request.resume();
        sendJson(response, 400, {
          error: 'bad_request',
          message: 'only http:// is forwarded; use CONNECT for https',
        });
        return;
      }
      gate.vet(info, request.headers['proxy-authorization'], url.hostname).then((refusal) => {
        if (!refusal) {
          forwardHttp(request, response, url, info, forwarding);
          return;
        }
        request.resume();
        sendRefusal(response, refusal);
      });
      return;
    }
    forwardHttp(request, response, url, info, forwarding);
  };
  server.on('request', handle);
  // With a listener here Node does not answer 100 itself: forwardHttp relays the origin's.
  server.on('checkContinue', handle);

  server.on('connect', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    if (!allowlist.allows(info.client.ip)) {
      closeWithStatus(socket, '403 Forbidden');
      return;
    }
    const authority = /^\[?([^\]]+?)\]?:\d+$/.exec(request.url ?? '')?.[1] ?? '';
    if (!acceptableHost(authority)) {
      closeWithStatus(socket, '400 Bad Request');
      return;
    }
    if (!destinations.allows(authority)) {
      logger.info({ host: authority }, destinationRefusal(authority));
      closeWithStatus(socket, '403 Forbidden');
      return;
    }
    gate.vet(info, request.headers['proxy-authorization'], authority).then((refusal) => {
      if (refusal) refuseSocket(socket, refusal);
      else openTunnel(request, socket, head, info, context.tunnels);
    });
  });

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    const raw = request.url ?? '/';
    const url = info.target ? tunnelTarget(info.target, raw) : absoluteTarget(raw);
    // The proxy's own URLs do not upgrade; they are never forwarded either.
    if (!url || context.isOwn(url) || (!info.target && raw.startsWith('/'))) {
      closeWithStatus(socket, '400 Bad Request');
      return;
    }
    if (!destinations.allows(url.hostname) || (!info.target && !allowlist.allows(info.client.ip))) {
      closeWithStatus(socket, '403 Forbidden');
      return;
    }
    // Inside a tunnel the CONNECT was vetted.
    if (info.target) {
      forwardUpgrade(request, socket, head, url, info, forwarding);
      return;
    }
    gate.vet(info, request.headers['proxy-authorization'], url.hostname).then((refusal) => {
      if (refusal) refuseSocket(socket, refusal);
      else forwardUpgrade(request, socket, head, url, info, forwarding);
    });
  });

  // Malformed requests: 400 to that client only (Node's parser error), never a crash.
  server.on('clientError', (error, socket) => {
    logger.debug({ err: error }, 'malformed request');
    if (socket.writable) closeWithStatus(socket, '400 Bad Request');
    else socket.destroy();
  });
}

/** Requests on the shared HTTP/2 server: always inside an intercepted tunnel. */
export function routeHttp2Requests(server: http2.Http2Server, context: RoutingContext): void {
  server.on('request', (request: Http2ServerRequest, response: Http2ServerResponse) => {
    const info = sessionInfo(request.stream.session as http2.Http2Session) as ConnectionInfo;
    const url = tunnelTarget(info.target as NonNullable<ConnectionInfo['target']>, request.url);
    if (!url || context.isOwn(url)) {
      // Management URLs are answered over HTTP/1.1 only, and never forwarded.
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: 'bad_request', message: 'request target is not usable' }),
      );
      return;
    }
    forwardHttp(request, response, url, info, context.forwarding);
  });
}
