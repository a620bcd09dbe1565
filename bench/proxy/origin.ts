// The benchmark's origin, run as its own process so it does not share the client's or the
// proxy's event loop: HTTP and HTTPS on loopback answering 1 KiB, the HTTPS side with leaves from
// an "origin CA" for whatever SNI name the client sends. Prints {"http":…,"https":…} when ready.
// Usage: node bench/proxy/origin.ts <ca-dir>
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { LeafCertificateCache, loadOrCreateCertificateAuthority } from '../../proxy/src/index.ts';

const caDir = process.argv[2] as string;
const ca = loadOrCreateCertificateAuthority(caDir, 'Bench Origin CA');
const leaves = await LeafCertificateCache.create(ca);
const body = Buffer.alloc(1024, 0x62);
const handler = (_request: http.IncomingMessage, response: http.ServerResponse) => {
  response.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-length': body.length,
  });
  response.end(body);
};
const listen = (server: http.Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
const fallback = await leaves.contextFor('127.0.0.1');
const httpPort = await listen(http.createServer({ keepAliveTimeout: 60_000 }, handler));
const httpsPort = await listen(
  https.createServer(
    {
      key: fallback.keyPem,
      cert: fallback.certPem,
      keepAliveTimeout: 60_000,
      SNICallback: (name, done) => {
        leaves.contextFor(name).then(
          (leaf) => done(null, leaf.context),
          (error: Error) => done(error),
        );
      },
    },
    handler,
  ),
);
process.stdout.write(`${JSON.stringify({ http: httpPort, https: httpsPort })}\n`);
