// The benchmark's origin, run as its own process so it does not share the client's or the
// proxy's event loop: HTTP and HTTPS on loopback answering 1 KiB, the HTTPS side with leaves from
// an "origin CA" for whatever SNI name the client sends; an HTTP/2-only HTTPS server and a gRPC
// server (unary, 1 KiB answers) for the HTTP/2 rows. Prints {"http":…,"https":…,"h2":…,"grpc":…}
// when ready.
// Usage: node bench/proxy/origin.ts <ca-dir>
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
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
const h2Server = http2.createSecureServer({
  key: fallback.keyPem,
  cert: fallback.certPem,
  SNICallback: (name, done) => {
    leaves.contextFor(name).then(
      (leaf) => done(null, leaf.context),
      (error: Error) => done(error),
    );
  },
});
h2Server.on('stream', (stream) => {
  stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
  stream.end(body);
});
const h2Port = await new Promise<number>((resolve) =>
  h2Server.listen(0, '127.0.0.1', () => resolve((h2Server.address() as AddressInfo).port)),
);
const localhost = await leaves.contextFor('localhost');
const grpcServer = new grpc.Server();
const identity = (value: Buffer) => value;
grpcServer.addService(
  {
    unary: {
      path: '/bench.Echo/Unary',
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  { unary: (_call: unknown, done: grpc.sendUnaryData<Buffer>) => done(null, body) },
);
const grpcPort = await new Promise<number>((resolve, reject) =>
  grpcServer.bindAsync(
    '127.0.0.1:0',
    grpc.ServerCredentials.createSsl(null, [
      { private_key: Buffer.from(localhost.keyPem), cert_chain: Buffer.from(localhost.certPem) },
    ]),
    (error, port) => (error ? reject(error) : resolve(port)),
  ),
);
process.stdout.write(
  `${JSON.stringify({ http: httpPort, https: httpsPort, h2: h2Port, grpc: grpcPort })}\n`,
);
