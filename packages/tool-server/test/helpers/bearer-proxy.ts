// A loopback HTTP proxy that adds `Authorization: Bearer <token>` to every request and forwards it
// to the tool server as if it had been addressed there: the proxy's own Host and Origin (by IP or
// as localhost) become the tool server's. For conformance tools and the Inspector, which can run
// MCP scenarios but cannot do our OAuth sign-in. Any other Host or Origin (a DNS-rebinding probe)
// is passed through unchanged, so the server's own checks still answer it.
import { createServer, request, type Server } from 'node:http';

export interface BearerProxy {
  url: string;
  stop(): Promise<void>;
}

export async function startBearerProxy(target: string, token: string): Promise<BearerProxy> {
  const upstream = new URL(target);
  let ownHosts: string[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    const host = ownHosts.includes(incoming.headers.host ?? '')
      ? upstream.host
      : incoming.headers.host;
    const origin = incoming.headers.origin;
    const ownOrigin = origin !== undefined && ownHosts.some((own) => origin === `http://${own}`);
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: incoming.url,
        method: incoming.method,
        headers: {
          ...incoming.headers,
          host,
          ...(ownOrigin ? { origin: upstream.origin } : {}),
          authorization: `Bearer ${token}`,
        },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    outgoing.on('close', () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  ownHosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  return {
    url: `http://127.0.0.1:${port}/`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
