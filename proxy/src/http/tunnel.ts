// CONNECT without interception (002 §4.3): the proxy answers 200 and pipes bytes both ways, and
// records the tunnel (kind `tunnel`: target, byte counts, duration). TLS interception inside the
// tunnel is the next step of the proxy issue; until then every tunnel is a passthrough.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Capture } from '../capture/capture.ts';

const TARGET = /^\[?([^\]]+?)\]?:(\d{1,5})$/;

export function openTunnel(
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
  source: 'manual' | 'pac',
  deliver: (capture: Capture) => void,
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
  const server = net.connect({ host, port }, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) server.write(head);
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
    const reason = `upstream ${host}:${port} unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`;
    if (client.writable && down === 0) {
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${reason}`,
      );
    } else {
      client.destroy();
    }
    record(reason);
  });
  client.on('error', () => server.destroy());
  server.on('close', () => {
    client.destroy();
    record();
  });
  client.on('close', () => server.destroy());
}
