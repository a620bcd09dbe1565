// The only way out of a farm sandbox with network (docs/farm.md "Network"): the sandbox has its
// own, empty network namespace; socat on its loopback (SANDBOX_PROXY_PORT) forwards to a Unix
// socket bound into it, and this bridge on the host connects that socket to the caller's farm
// device port on the capture proxy. Whatever the sandbox fetches is therefore captured under that
// device, and nothing else on the host (Postgres, the gateway, this server) can be reached.
import { chmodSync } from 'node:fs';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import type { FarmEgress } from './farm-egress.ts';

/** The forwarder's port on the sandbox's own loopback: what its proxy settings name. */
export const SANDBOX_PROXY_PORT = 3128;

/** Where the bridge's socket appears inside the sandbox (its directory is bound at /run/farm). */
export const SANDBOX_BRIDGE_SOCKET = '/run/farm/proxy.sock';

/**
 * Connections one sandbox may hold through the bridge at once: each is one on the capture proxy,
 * which every device shares, and a sandbox's processes could otherwise hold thousands (2,000 from
 * eight, measured). Chromium keeps at most 32 to one proxy; a shell's tools far fewer.
 */
export const MAX_BRIDGE_CONNECTIONS = 64;

/** Unix socket → the caller's device port. Close the returned server when the sandbox ends. */
export function startEgressBridge(socketPath: string, egress: FarmEgress): Promise<Server> {
  // Half-open both ways: a client that shuts down its side still gets the whole answer.
  const server = createServer({ allowHalfOpen: true }, (inside: Socket) => {
    const outside = netConnect({
      port: egress.proxyPort,
      host: egress.proxyHost,
      allowHalfOpen: true,
    });
    inside.on('error', () => outside.destroy());
    outside.on('error', () => inside.destroy());
    inside.pipe(outside).pipe(inside);
  });
  // Past the limit Node closes a new connection at once, so the proxy never sees it.
  server.maxConnections = MAX_BRIDGE_CONNECTIONS;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      // The sandbox's uid must be able to connect; the directory is ours alone otherwise.
      chmodSync(socketPath, 0o666);
      resolve(server);
    });
  });
}

/**
 * sh lines, run first inside the sandbox: start the forwarder and wait until it listens (read
 * from /proc/net/tcp, so no tool beyond sh, grep and socat is needed), exit 125 if it never does.
 * The forwarder does not inherit descriptors 3 and 4 (a browser's DevTools pipes), so the pipes
 * close when the browser exits.
 */
export function forwarderStartLines(): string[] {
  const hexPort = SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, '0');
  return [
    `socat TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_BRIDGE_SOCKET} 3>&- 4>&- &`,
    'i=0',
    `while ! grep -q ':${hexPort} 00000000:0000 0A' /proc/net/tcp; do`,
    '  i=$((i+1)); [ "$i" -gt 200 ] && { echo "farm: the proxy forwarder did not start" >&2; exit 125; }',
    '  sleep 0.01',
    'done',
  ];
}
