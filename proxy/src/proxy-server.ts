// The proxy's listener (002 §4.3, §5): plain HTTP forwarding and CONNECT on one port, the
// proxy's own management URLs answered locally whatever Host they name, and egress limited to
// clients on the source-IP allowlist (others get 403 and nothing leaves).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { CaptureWriter } from './capture/capture-writer.ts';
import { forwardHttp } from './http/forward-http.ts';
import { openTunnel, tunnelTargets } from './http/tunnel.ts';
import type { CertificateAuthority } from './tls/certificate-authority.ts';

export interface ProxyOptions {
  port: number;
  host?: string;
  writer: CaptureWriter;
  /** CIDRs or addresses allowed to send traffic through (002 §5). */
  allowlist: string[];
  /** Bytes of each body kept in the capture. */
  bodyCap?: number;
  /** The project CA, offered for download at /ca.pem and /ca.der. */
  ca?: CertificateAuthority;
  logger: Logger;
}

export interface RunningProxy {
  port: number;
  stop(): Promise<void>;
}

/** Paths the proxy answers itself (never forwarded): health and the CA; PAC, /allocate to come. */
const MANAGEMENT_PATHS = new Set(['/health', '/ca.pem', '/ca.der']);

function buildAllowlist(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

function allowed(list: BlockList, address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

export async function startProxy(options: ProxyOptions): Promise<RunningProxy> {
  const allowlist = buildAllowlist(options.allowlist);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const context = {
    agent,
    bodyCap: options.bodyCap ?? 1024 * 1024,
    source: 'manual' as const,
    deliver: (capture: Parameters<CaptureWriter['enqueue']>[0]) => options.writer.enqueue(capture),
  };
  const server = http.createServer({ requireHostHeader: false });
  let ownPort = options.port;

  const isManagement = (target: URL | null) => {
    if (!target) return true; // origin-form: addressed to the proxy itself
    const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(target.hostname);
    return local && Number(target.port || 80) === ownPort && MANAGEMENT_PATHS.has(target.pathname);
  };

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (!allowed(allowlist, request.socket.remoteAddress)) {
      sendJson(response, 403, { error: 'forbidden', message: 'source address not allowed' });
      return;
    }
    // Plain HTTP that arrived inside a CONNECT tunnel: origin-form, addressed to the tunnel's target.
    const tunnel = tunnelTargets.get(request.socket);
    if (tunnel) {
      const host = tunnel.host.includes(':') ? `[${tunnel.host}]` : tunnel.host;
      forwardHttp(
        request,
        response,
        new URL(`http://${host}:${tunnel.port}${request.url ?? '/'}`),
        context,
      );
      return;
    }
    let target: URL | null = null;
    if (!(request.url ?? '').startsWith('/')) {
      try {
        target = new URL(request.url ?? '');
      } catch {
        sendJson(response, 400, { error: 'bad_request', message: 'request target is not a URL' });
        return;
      }
    }
    if (isManagement(target)) {
      const path = target ? target.pathname : new URL(request.url ?? '/', 'http://proxy').pathname;
      if (path === '/health') {
        sendJson(response, 200, { status: 'ok', captures: options.writer.stats() });
      } else if (path === '/ca.pem' && options.ca) {
        response.writeHead(200, {
          'content-type': 'application/x-pem-file',
          'content-disposition': 'attachment; filename="capture-ca.pem"',
        });
        response.end(options.ca.certPem);
      } else if (path === '/ca.der' && options.ca) {
        // The form Android and iOS install from a download.
        response.writeHead(200, {
          'content-type': 'application/x-x509-ca-cert',
          'content-disposition': 'attachment; filename="capture-ca.der"',
        });
        response.end(options.ca.certDer);
      } else {
        sendJson(response, 404, { error: 'not_found', message: `no management URL ${path}` });
      }
      return;
    }
    if (target?.protocol !== 'http:') {
      sendJson(response, 400, {
        error: 'bad_request',
        message: 'only http:// is forwarded; use CONNECT for https',
      });
      return;
    }
    forwardHttp(request, response, target, context);
  });

  server.on('connect', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!allowed(allowlist, request.socket.remoteAddress)) {
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    openTunnel(request, socket, head, 'manual', context.deliver, (plain) =>
      server.emit('connection', plain),
    );
  });

  // Malformed requests: 400 to that client only (Node's parser error), never a crash.
  server.on('clientError', (error, socket) => {
    options.logger.debug({ err: error }, 'malformed request');
    if (socket.writable)
      socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  ownPort = (server.address() as { port: number }).port;
  return {
    port: ownPort,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
