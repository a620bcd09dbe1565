// CONNECT (002 §4.3): the proxy answers 200, then looks at the client's first byte
// (proxy-anchors §1.3.1: undici and ws tunnel plain http:// too).
// - Anything but a TLS record (0x16): plain HTTP, handed to the HTTP server and captured request
//   by request against the tunnel's target.
// - TLS to a host on the passthrough list (configured, or learned after a client refused our
//   certificate): piped untouched and recorded as kind `tunnel` with the reason.
// - Other TLS: intercepted with a leaf for the SNI name signed by the project CA; the decrypted
//   connection goes to the HTTP/1.1 server, or the HTTP/2 one when the client chose h2 by ALPN.
//   A failed handshake is recorded and teaches the passthrough policy about the host.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { Capture } from '../capture/capture.ts';
import { connectionFields } from '../capture/capture.ts';
import { type ConnectionInfo, describeConnection } from '../connection-info.ts';
import type { LeafCertificateCache } from '../tls/leaf-certificates.ts';
import type { PassthroughDecision, PassthroughPolicy } from '../tls/passthrough-policy.ts';

const TARGET = /^\[?([^\]]+?)\]?:(\d{1,5})$/;
const TLS_HANDSHAKE_RECORD = 0x16;
/** A client that connects but never finishes a handshake is dropped after this long. */
const HANDSHAKE_TIMEOUT_MS = 15_000;

export interface TunnelContext {
  deliver(capture: Capture): void;
  passthrough: PassthroughPolicy;
  /** Null when interception is off: every TLS tunnel passes through. */
  leaves: LeafCertificateCache | null;
  /** Offer h2 by ALPN to intercepted clients. */
  http2: boolean;
  /** A tunnel whose client sends nothing is closed after this long. */
  firstByteTimeoutMs: number;
  /** The DNS lookup for a destination port (the destination policy's, see forward-context.ts). */
  lookupFor(port: number): net.LookupFunction;
  serveHttp1(socket: Duplex): void;
  serveHttp2(socket: tls.TLSSocket, info: ConnectionInfo): void;
  logger: Logger;
}

export function openTunnel(
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
  outer: ConnectionInfo,
  context: TunnelContext,
): void {
  const match = TARGET.exec(request.url ?? '');
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65_535) {
    client.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  const host = (match[1] as string).toLowerCase();
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  const sniff = (first: Buffer) => {
    // Nothing may flow past before the HTTP parser, TLS or the upstream pipe is attached.
    client.pause();
    client.unshift(first);
    if (first[0] !== TLS_HANDSHAKE_RECORD) {
      describeConnection(client, { ...outer, target: { host, port, scheme: 'http' } });
      context.serveHttp1(client);
      // An explicitly paused stream stays paused when the server adds its listener.
      client.resume();
      return;
    }
    const decision = context.leaves
      ? context.passthrough.decide(host, outer.client.ip)
      : { reason: 'configured' as const, detail: 'interception is off' };
    if (decision) passThrough(client, host, port, outer, decision, context);
    else void intercept(client, host, port, outer, context);
  };
  if (head.length > 0) {
    sniff(head);
    return;
  }
  // A tunnel nobody speaks into is closed; once it carries traffic, idle is the client's call.
  const silent = setTimeout(() => client.destroy(), context.firstByteTimeoutMs);
  client.once('data', (first: Buffer) => {
    clearTimeout(silent);
    sniff(first);
  });
  client.once('close', () => clearTimeout(silent));
}

function tunnelCapture(
  host: string,
  port: number,
  outer: ConnectionInfo,
  startedAt: Date,
  payload: Record<string, unknown>,
  kind: Capture['kind'] = 'tunnel',
): Capture {
  return {
    request_id: randomUUID(),
    ts: startedAt.toISOString(),
    kind,
    device_uuid: outer.attribution.deviceUuid,
    payload: {
      method: 'CONNECT',
      host,
      port,
      url: `${host}:${port}`,
      path: null,
      ...connectionFields(outer),
      ...payload,
    },
  };
}

function passThrough(
  client: Duplex,
  host: string,
  port: number,
  outer: ConnectionInfo,
  decision: PassthroughDecision,
  context: TunnelContext,
): void {
  const startedAt = new Date();
  const started = performance.now();
  let up = 0;
  let down = 0;
  let recorded = false;
  const record = (error?: string) => {
    if (recorded) return;
    recorded = true;
    context.deliver(
      tunnelCapture(
        host,
        port,
        outer,
        startedAt,
        {
          tls: { intercepted: false, passthrough: decision },
          sizes: { clientToServer: up, serverToClient: down },
          timings: { total: Math.round((performance.now() - started) * 100) / 100 },
          ...(error ? { statusCode: 502, error } : {}),
        },
        error ? 'error' : 'tunnel',
      ),
    );
  };
  const server = net.connect({ host, port, lookup: context.lookupFor(port) }, () => {
    client.pipe(server);
    server.pipe(client);
    client.resume();
  });
  client.on('data', (chunk: Buffer) => {
    up += chunk.length;
  });
  server.on('data', (chunk: Buffer) => {
    down += chunk.length;
  });
  server.on('error', (error) => {
    client.destroy();
    record(
      `upstream ${host}:${port} unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
    );
  });
  client.on('error', () => server.destroy());
  server.on('close', () => {
    client.destroy();
    record();
  });
  client.on('close', () => server.destroy());
}

async function intercept(
  client: Duplex,
  host: string,
  port: number,
  outer: ConnectionInfo,
  context: TunnelContext,
): Promise<void> {
  const leaves = context.leaves as LeafCertificateCache;
  const startedAt = new Date();
  const started = performance.now();
  let initial: tls.SecureContext;
  try {
    // The CONNECT host's context serves clients that send no SNI (an IP target); a client whose
    // SNI names another host gets that name's leaf through the callback.
    initial = (await leaves.contextFor(host)).context;
  } catch (error) {
    context.logger.error({ err: error, host }, 'cannot sign a leaf certificate');
    client.destroy();
    return;
  }
  let sni: string | null = null;
  const secure = new tls.TLSSocket(client as net.Socket, {
    isServer: true,
    secureContext: initial,
    ALPNProtocols: context.http2 ? ['h2', 'http/1.1'] : ['http/1.1'],
    SNICallback: (servername, done) => {
      sni = servername.toLowerCase();
      if (sni === host) return done(null, initial);
      leaves.contextFor(sni).then(
        (leaf) => done(null, leaf.context),
        (error: Error) => done(error),
      );
    },
  });
  const timeout = setTimeout(
    () => secure.destroy(new Error('handshake timed out')),
    HANDSHAKE_TIMEOUT_MS,
  );
  let established = false;
  const failed = (reason: string) => {
    clearTimeout(timeout);
    if (established) return;
    established = true; // report once
    // The client hung up on our certificate: it does not trust the CA or pins the real one.
    context.passthrough.learn(host, outer.client.ip, reason);
    context.deliver(
      tunnelCapture(
        host,
        port,
        outer,
        startedAt,
        {
          tls: { intercepted: false, sni, handshakeError: reason },
          timings: { total: Math.round((performance.now() - started) * 100) / 100 },
          error: `TLS handshake with the client failed: ${reason}; later tunnels to ${sni ?? host} pass through`,
        },
        'error',
      ),
    );
  };
  secure.once('secure', () => {
    clearTimeout(timeout);
    established = true;
    const cipher = secure.getCipher();
    const info: ConnectionInfo = {
      ...outer,
      target: { host, port, scheme: 'https' },
      tls: {
        sni,
        alpn: secure.alpnProtocol || null,
        version: secure.getProtocol(),
        cipher: cipher?.standardName ?? cipher?.name ?? null,
        intercepted: true,
      },
    };
    describeConnection(secure, info);
    // A server-side TLSSocket made by hand (not by tls.Server) keeps `secureConnecting` set after
    // its handshake; an HTTP/2 session would then wait forever for a 'secureConnect' that only
    // client sockets emit.
    (secure as tls.TLSSocket & { secureConnecting: boolean }).secureConnecting = false;
    if (secure.alpnProtocol === 'h2') context.serveHttp2(secure, info);
    else context.serveHttp1(secure);
  });
  secure.on('error', (error: NodeJS.ErrnoException) => {
    if (!established) failed(error.code ?? error.message);
    secure.destroy();
  });
  secure.on('close', () => {
    if (!established) failed('client closed the connection during the handshake');
  });
  client.resume();
}
