// WebSocket and other Upgrade requests (RFC 9110 §7.8, RFC 6455 §4): the handshake goes to the
// origin with its Connection/Upgrade headers kept; on 101 both sockets are joined and the
// handshake is captured at once as kind `websocket` (request and response headers); a refused
// upgrade is relayed as the origin sent it. The frames pass through untouched; when the
// connection closes, a second `websocket` row (`phase: 'closed'`, `handshake_request_id` naming
// the first) records the messages both ways (up to 100 and the body cap), their counts, the bytes
// and the duration. Rows are immutable, hence two: the handshake shows while the socket is open.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { connectionFields } from '../capture/capture.ts';
import type { ConnectionInfo } from '../connection-info.ts';
import type { ForwardContext } from './forward-context.ts';
import { forwardedHeaders, headerPairs } from './raw-headers.ts';
import { requestUpstream } from './request-upstream.ts';
import { FrameReader, type WebSocketMessage } from './websocket-frames.ts';

const KEEP_FOR_UPGRADE = new Set(['connection', 'upgrade']);

function rawResponseHead(response: IncomingMessage, headers: string[]): string {
  const lines = [`HTTP/1.1 ${response.statusCode} ${response.statusMessage ?? ''}`];
  for (let index = 0; index + 1 < headers.length; index += 2) {
    lines.push(`${headers[index]}: ${headers[index + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export function forwardUpgrade(
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: URL,
  info: ConnectionInfo,
  context: ForwardContext,
): void {
  const startedAt = new Date();
  const started = performance.now();
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const hostname = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port || (secure ? 443 : 80));
  const handshakeId = randomUUID();
  const capture = (
    kind: 'websocket' | 'error',
    extra: Record<string, unknown>,
    requestId: string = handshakeId,
  ) =>
    context.deliver({
      request_id: requestId,
      ts: startedAt.toISOString(),
      kind,
      device_uuid: info.attribution.deviceUuid,
      payload: {
        method: request.method ?? 'GET',
        scheme: secure ? 'wss' : 'ws',
        host: hostname,
        port,
        path: target.pathname,
        query: target.search.replace(/^\?/, ''),
        url: `${secure ? 'wss' : 'ws'}://${target.host}${target.pathname}${target.search}`,
        httpVersion: `HTTP/${request.httpVersion}`,
        requestHeaders: headerPairs(request.rawHeaders),
        ...connectionFields(info),
        timings: { total: Math.round((performance.now() - started) * 100) / 100 },
        ...extra,
      },
    });
  const upstream = requestUpstream(request, target, info, context, KEEP_FOR_UPGRADE);

  upstream.on('upgrade', (response, upstreamSocket: Duplex, upstreamHead: Buffer) => {
    client.write(rawResponseHead(response, response.rawHeaders));
    if (upstreamHead.length > 0) client.write(upstreamHead);
    if (head.length > 0) upstreamSocket.write(head);
    upstreamSocket.pipe(client);
    client.pipe(upstreamSocket);
    upstreamSocket.on('error', () => client.destroy());
    client.on('error', () => upstreamSocket.destroy());
    upstreamSocket.on('close', () => client.destroy());
    client.on('close', () => upstreamSocket.destroy());
    const handshake = {
      statusCode: response.statusCode,
      statusText: response.statusMessage,
      responseHeaders: headerPairs(response.rawHeaders),
    };
    capture('websocket', handshake);
    recordMessages(client, upstreamSocket, head, upstreamHead, context.bodyCap, (messages) =>
      capture(
        'websocket',
        { ...handshake, ...messages, handshake_request_id: handshakeId },
        `${handshakeId}:closed`,
      ),
    );
  });
  upstream.on('response', (response) => {
    // The origin declined the upgrade: pass its answer on and close.
    client.write(
      rawResponseHead(response, [...forwardedHeaders(response.rawHeaders), 'connection', 'close']),
    );
    response.pipe(client);
    capture('websocket', {
      statusCode: response.statusCode,
      statusText: response.statusMessage,
      responseHeaders: headerPairs(response.rawHeaders),
      error: 'the origin did not switch protocols',
    });
  });
  upstream.on('error', (error) => {
    const reason = `upstream ${target.host} unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`;
    const body = JSON.stringify({ error: 'bad_gateway', message: reason });
    client.end(
      `HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    capture('error', { statusCode: 502, error: reason });
  });
  client.on('error', () => upstream.destroy());
  upstream.end();
}

/** Reads both directions' frames and reports them once, when either side closes. */
function recordMessages(
  client: Duplex,
  origin: Duplex,
  clientHead: Buffer,
  originHead: Buffer,
  bodyCap: number,
  report: (summary: Record<string, unknown>) => void,
): void {
  const openedAt = performance.now();
  const messages: WebSocketMessage[] = [];
  const budget = { messages: 100, bytes: bodyCap };
  const sent = new FrameReader('send', messages, budget, openedAt);
  const received = new FrameReader('receive', messages, budget, openedAt);
  const sizes = { clientToServer: 0, serverToClient: 0 };
  const tap = (reader: FrameReader, side: keyof typeof sizes) => (chunk: Buffer) => {
    sizes[side] += chunk.length;
    try {
      reader.push(chunk);
    } catch {
      reader.broken = true; // the record stops; the bytes still flow
    }
  };
  const readSent = tap(sent, 'clientToServer');
  const readReceived = tap(received, 'serverToClient');
  if (clientHead.length > 0) readSent(clientHead);
  if (originHead.length > 0) readReceived(originHead);
  client.on('data', readSent);
  origin.on('data', readReceived);
  let reported = false;
  const done = () => {
    if (reported) return;
    reported = true;
    report({
      phase: 'closed',
      messages: messages.sort((a, b) => a.at - b.at),
      messageCounts: { send: sent.count, receive: received.count },
      messagesComplete: !sent.broken && !received.broken,
      sizes,
      timings: { open: Math.round((performance.now() - openedAt) * 100) / 100 },
    });
  };
  client.once('close', done);
  origin.once('close', done);
}
