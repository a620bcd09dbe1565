// Loopback origins for proxy tests: the same handler over HTTP and over HTTPS on several loopback
// addresses (127.0.0.1 answers as `localhost` too), the HTTPS ones with certificates from an
// "origin CA" that is not the proxy's, so a client can tell intercepted from passed-through TLS.
// Routes: /big/<bytes> streams that many bytes; /ws upgrades to an echoing WebSocket; anything
// else answers JSON {method, url, body, httpVersion}.
import { mkdtempSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import {
  type CertificateAuthority,
  LeafCertificateCache,
  loadOrCreateCertificateAuthority,
} from '../../src/index.ts';

/**
 * The explicit opt-in for proxies in tests whose origins are on loopback: public
 * destinations as by default, plus loopback, which the proxy refuses unless told.
 */
export const LOOPBACK_DESTINATIONS = ['public', '127.0.0.0/8', '::1/128', 'localhost'];

export interface Origins {
  httpPort: number;
  /** Port of the HTTPS origin, the same on every address in `httpsHosts`. */
  httpsPort: number;
  originCa: CertificateAuthority;
  /** Requests seen, by path. */
  hits: Map<string, number>;
  stop(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x61);

function handler(hits: Map<string, number>) {
  return (request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://origin').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const big = /^\/big\/(\d+)$/.exec(path);
    if (big) {
      let left = Number(big[1]);
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': left,
      });
      const pump = () => {
        while (left > 0) {
          const piece = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
          left -= piece.length;
          if (!response.write(piece)) {
            response.once('drain', pump);
            return;
          }
        }
        response.end();
      };
      pump();
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'X-Origin': 'yes' });
      response.end(
        JSON.stringify({
          method: request.method,
          url: request.url,
          body: Buffer.concat(chunks).toString(),
          httpVersion: request.httpVersion,
        }),
      );
    });
  };
}

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

export async function startOrigins(httpsHosts: string[]): Promise<Origins> {
  const caDir = mkdtempSync(join(tmpdir(), 'origin-ca-'));
  const originCa = loadOrCreateCertificateAuthority(caDir, 'Origin Test CA');
  const leaves = await LeafCertificateCache.create(originCa);
  const hits = new Map<string, number>();
  const servers: http.Server[] = [];
  const sockets = new WebSocketServer({ noServer: true });
  sockets.on('connection', (socket) => {
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
  });
  const withWebSocket = (server: http.Server) => {
    server.on('upgrade', (request, socket, head) => {
      sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws));
    });
    servers.push(server);
    return server;
  };
  const httpPort = await listen(withWebSocket(http.createServer(handler(hits))), 0, '127.0.0.1');
  let httpsPort = 0;
  for (const host of httpsHosts) {
    // Without SNI (a client reaching it by address sends none, RFC 6066 §3) it answers with a
    // certificate for its own address, as a server reached by address must.
    const leaf = await leaves.contextFor(host);
    const server = https.createServer(
      {
        key: leaf.keyPem,
        cert: leaf.certPem,
        SNICallback: (name, done) => {
          leaves.contextFor(name).then(
            (named) => done(null, named.context),
            (error: Error) => done(error),
          );
        },
      },
      handler(hits),
    );
    httpsPort = await listen(withWebSocket(server), httpsPort, host);
  }
  return {
    httpPort,
    httpsPort,
    originCa,
    hits,
    async stop() {
      for (const client of sockets.clients) client.terminate();
      await Promise.all(
        servers.map(
          (server) =>
            new Promise((resolve) => {
              server.closeAllConnections();
              server.close(resolve);
            }),
        ),
      );
      rmSync(caDir, { recursive: true, force: true });
    },
  };
}
