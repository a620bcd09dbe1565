// A minimal forward proxy for LAN tests: absolute-form requests (RFC 9112 §3.2.2) and CONNECT
// tunnels (RFC 9110 §9.3.6), each recorded with the client's address. It reaches only the hosts
// it is given, so a browser's own background requests (updates and the like) never leave.
import http from 'node:http';
import { connect, type Socket } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** The absolute URL, or host:port for CONNECT. */
  target: string;
  clientAddress: string;
  allowed: boolean;
}

export interface RecordingProxy {
  port: number;
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/** Listens on `host` (port chosen by the system); forwards only to `allowedHosts`. */
export async function startRecordingProxy(options: {
  host: string;
  allowedHosts: string[];
}): Promise<RecordingProxy> {
  const requests: ProxiedRequest[] = [];
  const tunnels = new Set<Socket>();
  const record = (method: string, target: string, socket: Socket, hostname: string) => {
    const allowed = options.allowedHosts.includes(hostname);
    requests.push({ method, target, clientAddress: socket.remoteAddress ?? '', allowed });
    return allowed;
  };

  const server = http.createServer((request, response) => {
    const url = URL.parse(request.url ?? '');
    const method = request.method ?? 'GET';
    if (!url || !record(method, request.url ?? '', request.socket, url.hostname)) {
      response.writeHead(403).end();
      return;
    }
    const upstream = http.request(url, { method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });

  server.on('connect', (request: http.IncomingMessage, client: Socket, head: Buffer) => {
    // RFC 9110 §9.3.6: the target is host:port (authority-form).
    const target = request.url ?? '';
    const colon = target.lastIndexOf(':');
    const hostname = target.slice(0, colon);
    if (colon < 0 || !record('CONNECT', target, client, hostname)) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = connect(Number(target.slice(colon + 1)), hostname, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    for (const socket of [client, upstream]) {
      tunnels.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        tunnels.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host, resolve);
  });
  return {
    port: (server.address() as { port: number }).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of tunnels) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
