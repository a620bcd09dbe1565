// The stack's in-process HTTP services (auth, storage) on a loopback port.
import { type ServerType, serve } from '@hono/node-server';

/**
 * Resolves once `fetch` is served on 127.0.0.1:`port`. A listen error rejects instead of being
 * thrown from an event: with free ports, another process may take the port between its choice
 * and this bind, and startStack retries such a start on new ports.
 */
export function serveOnLoopback(
  fetch: (request: Request) => Response | Promise<Response>,
  port: number,
): Promise<ServerType> {
  return new Promise<ServerType>((resolve, reject) => {
    const server = serve({ fetch, port, hostname: '127.0.0.1' }, () => {
      server.off('error', reject);
      resolve(server);
    });
    server.once('error', reject);
  });
}
