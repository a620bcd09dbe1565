// The HTTP/1.1 request to the origin, for forwarded exchanges (forward-http1.ts) and WebSocket
// handshakes (websocket.ts): over the daemon's keep-alive agents, through the destination
// policy's lookup, with the headers as forwarded and a body framed the origin can read.
import http from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import https from 'node:https';
import { isIP } from 'node:net';
import type { ConnectionInfo } from '../connection-info.ts';
import type { ClientRequest, ForwardContext, HeldRequest } from './forward-context.ts';
import { forwardedHeaders } from './raw-headers.ts';

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
        servername: upstreamServername(info.tls?.sni, hostname),
      })
    : http.request({ ...options, agent: context.agent });
}

/**
 * The SNI name sent to the origin: the name the client asked for, else the target's host; never an
 * IP address (RFC 6066 §3 allows host names only, and Node deprecates it, DEP0123), so an origin
 * reached by address gets no SNI and its certificate is checked against the address.
 */
export function upstreamServername(
  sni: string | null | undefined,
  hostname: string,
): string | undefined {
  const name = sni ?? hostname;
  return isIP(name) ? undefined : name;
}

function hasBody(request: ClientRequest): boolean {
  if (request.httpVersionMajor === 2)
    return !(request as Http2ServerRequest).stream.endAfterHeaders;
  return request.headers['transfer-encoding'] !== undefined;
}
