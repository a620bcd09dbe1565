// CONNECT (002 §4.3): the proxy answers 200, then looks at the client's first byte. Plain HTTP
// (anything but a TLS record, 0x16) is handed to the proxy's HTTP server and captured request by
// request against the tunnel's target. TLS is passed through and the tunnel recorded (kind
// `tunnel`: target, byte counts, duration); intercepting it is the next step of the proxy issue.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Capture } from '../capture/capture.ts';

const TARGET = /^\[?([^\]]+?)\]?:(\d{1,5})$/;

export interface TunnelTarget {
  host: string;
  port: number;
}

/** The target a socket handed over from a CONNECT tunnel talks to. */
export const tunnelTargets = new WeakMap<object, TunnelTarget>();

const TLS_HANDSHAKE_RECORD = 0x16;

export function openTunnel(
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
  source: 'manual' | 'pac',
  deliver: (capture: Capture) => void,
  servePlainHttp: (socket: Duplex) => void,
): void {
  const match = TARGET.exec(request.url ?? '');
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65_535) {
    client.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  const host = match[1] as string;
  const startedAt = new Date();
  const started = performance.now();
  let up = head.length;
  let down = 0;
  let recorded = false;
  const record = (error?: string) => {
    if (recorded) return;
    recorded = true;
    deliver({
      request_id: randomUUID(),
      ts: startedAt.toISOString(),
      kind: error ? 'error' : 'tunnel',
      device_uuid: null,
      payload: {
        method: 'CONNECT',
        host,
        port,
        url: `${host}:${port}`,
        path: null,
        client: {
          ip: request.socket.remoteAddress ?? null,
          port: request.socket.remotePort ?? null,
        },
        tls: { intercepted: false, passthrough_reason: 'interception not enabled' },
        sizes: { clientToServer: up, serverToClient: down },
        timings: { total: Math.round((performance.now() - started) * 100) / 100 },
        attribution: { rule: 'proxy' },
        source,
        ...(error ? { statusCode: 502, error } : {}),
      },
    });
  };
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  const sniff = (first: Buffer) => {
    // Nothing may flow past before the HTTP parser or the upstream pipe is attached.
    client.pause();
    if (first[0] !== TLS_HANDSHAKE_RECORD) {
      tunnelTargets.set(client, { host, port });
      client.unshift(first);
      servePlainHttp(client);
      // An explicitly paused stream stays paused when the server adds its listener.
      client.resume();
      return;
    }
    passThrough(first);
  };
  if (head.length > 0) sniff(head);
  else client.once('data', sniff);

  function passThrough(first: Buffer) {
    up = first.length;
    const server = net.connect({ host, port }, () => {
      server.write(first);
      client.pipe(server);
      server.pipe(client);
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
}
