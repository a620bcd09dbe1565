// Every connection a listener accepts (002 §4.3, §4.4): tagged with its listener, client and
// attribution (a device's own port, else the client address a device allocated from; docs/proxy.md
// "Devices, ports and PAC"), closed if the client says nothing, then handed on by its first byte:
// a TLS record is TLS to the proxy itself (an HTTPS proxy), anything else the shared HTTP server.
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { AddressList } from './address-list.ts';
import { type ConnectionInfo, describeConnection } from './connection-info.ts';
import type { DeviceRegistry } from './devices/device-registry.ts';
import type { LeafCertificateCache } from './tls/leaf-certificates.ts';
import { acceptTlsToProxy, type SecureProxyContext } from './tls/secure-proxy.ts';

const TLS_HANDSHAKE_RECORD = 0x16;

export interface AcceptContext {
  registry: DeviceRegistry | undefined;
  /** The shared and management ports: traffic there is not a device's by its port. */
  isFixedPort(port: number): boolean;
  allowlist: AddressList;
  /** Null when interception is off: then no TLS to the proxy either. */
  leaves: LeafCertificateCache | null;
  firstByteTimeoutMs: number;
  secureProxy: SecureProxyContext;
  serveHttp1(socket: Duplex): void;
}

export function acceptConnection(
  socket: net.Socket,
  listenerPort: number,
  context: AcceptContext,
): void {
  socket.on('error', () => undefined);
  socket.setNoDelay(true);
  const ip = socket.remoteAddress ?? null;
  const info: ConnectionInfo = {
    client: { ip, port: socket.remotePort ?? null },
    listenerPort,
    ...attribute(listenerPort, ip, context),
  };
  describeConnection(socket, info);
  // A client that connects and says nothing is not kept: the HTTP server's own timeouts only
  // start once it has the connection.
  socket.setTimeout(context.firstByteTimeoutMs, () => socket.destroy());
  socket.once('data', (first: Buffer) => {
    socket.setTimeout(0);
    socket.pause();
    socket.unshift(first);
    if (first[0] === TLS_HANDSHAKE_RECORD && context.leaves) {
      // TLS to the proxy is for clients that may use it: others cost no certificate work.
      if (!context.allowlist.allows(ip)) {
        socket.destroy();
        return;
      }
      void acceptTlsToProxy(socket, info, context.secureProxy);
      return;
    }
    context.serveHttp1(socket);
    socket.resume();
  });
}

/** Who the connection's traffic belongs to, before any TLS to the proxy names a device by SNI. */
function attribute(
  listenerPort: number,
  ip: string | null,
  context: AcceptContext,
): Pick<ConnectionInfo, 'attribution' | 'source'> {
  const byPort = context.registry?.deviceForPort(listenerPort);
  if (byPort && !context.isFixedPort(listenerPort)) {
    return { attribution: { rule: 'port', deviceUuid: byPort.uuid }, source: byPort.source };
  }
  const byIp = context.registry?.deviceForIp(ip);
  if (byIp) return { attribution: { rule: 'ip', deviceUuid: byIp }, source: 'manual' };
  return { attribution: { rule: 'proxy', deviceUuid: null }, source: 'manual' };
}
