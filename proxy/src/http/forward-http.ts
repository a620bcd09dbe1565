// Forwarding one exchange (002 §4.3; docs/proxy.md "What happens to a request"): absolute-form
// HTTP, origin-form HTTP inside a tunnel, and decrypted HTTPS (HTTP/1.1 or HTTP/2 from the
// client). This picks the path: an exchange a breakpoint pattern matches is held
// (forward-held.ts); an HTTP/2 client's request goes over HTTP/2 to an origin that offers it
// (forward-http2.ts); everything else goes over HTTP/1.1 (forward-http1.ts). Without a pattern
// set anywhere, a request costs one property read before it streams.
import { randomUUID } from 'node:crypto';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { ConnectionInfo } from '../connection-info.ts';
import type { ClientRequest, ClientResponse, ForwardContext } from './forward-context.ts';
import { forwardHeld } from './forward-held.ts';
import { forwardToHttp1Origin } from './forward-http1.ts';
import { forwardToHttp2Origin } from './forward-http2.ts';
import { upstreamServername } from './request-upstream.ts';

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
    origins
      .session({ host: hostname, port, servername: upstreamServername(info.tls?.sni, hostname) })
      .then(
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
            forwardToHttp1Origin(request, response, target, info, context, {
              requestId: randomUUID(),
              records: [],
            });
          }
        },
        // Unreachable over TLS at all: the HTTP/1.1 path answers 502 and captures why.
        () =>
          forwardToHttp1Origin(request, response, target, info, context, {
            requestId: randomUUID(),
            records: [],
          }),
      );
    return;
  }
  forwardToHttp1Origin(request, response, target, info, context, {
    requestId: randomUUID(),
    records: [],
  });
}
