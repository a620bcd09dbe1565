// TLS to the proxy itself: a client that speaks HTTPS to its proxy (curl --proxy https://…, a PAC
// `HTTPS host:port` entry) starts its connection with a ClientHello instead of a request line.
// The proxy answers with a leaf for its own name (the proxy domain or a name under it; any other
// SNI gets the proxy domain's leaf, so nobody makes the proxy sign for arbitrary names), signed
// by the project CA the device already trusts, and then serves the proxy protocol inside. The
// SNI names the device: `<port>.{proxy_domain}` attributes the connection to the device owning
// that port (002 §4.4, the chain's second rule), for clients that share the manual port. A
// handshake that does not finish in time is dropped.
import type net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { type ConnectionInfo, describeConnection } from '../connection-info.ts';
import type { PortDevice } from '../devices/device-registry.ts';
import { pacSubdomain } from '../devices/pac.ts';
import type { LeafCertificateCache } from './leaf-certificates.ts';

/** A client that starts TLS and never finishes the handshake is dropped after this long. */
const HANDSHAKE_TIMEOUT_MS = 15_000;

export interface SecureProxyContext {
  leaves: LeafCertificateCache;
  /** Base domain the device names live under; without it SNI attributes nothing. */
  proxyDomain: string | undefined;
  deviceForPort(port: number): PortDevice | undefined;
  serve(socket: tls.TLSSocket): void;
  logger: Logger;
}

export async function acceptTlsToProxy(
  socket: net.Socket,
  outer: ConnectionInfo,
  context: SecureProxyContext,
): Promise<void> {
  let fallback: tls.SecureContext;
  try {
    fallback = (await context.leaves.contextFor(context.proxyDomain ?? 'localhost')).context;
  } catch (error) {
    context.logger.error({ err: error }, 'cannot sign the proxy certificate');
    socket.destroy();
    return;
  }
  const secure = new tls.TLSSocket(socket, {
    isServer: true,
    secureContext: fallback,
    ALPNProtocols: ['http/1.1'],
    SNICallback: (servername, done) => {
      const domain = context.proxyDomain;
      const ours = domain !== undefined && pacSubdomain(servername, domain) !== null;
      if (!ours) {
        done(null, fallback);
        return;
      }
      context.leaves.contextFor(servername).then(
        (leaf) => done(null, leaf.context),
        (error: Error) => done(error),
      );
    },
  });
  const timeout = setTimeout(() => secure.destroy(), HANDSHAKE_TIMEOUT_MS);
  secure.once('close', () => clearTimeout(timeout));
  secure.once('secure', () => {
    clearTimeout(timeout);
    const sni = (secure as tls.TLSSocket & { servername?: string | false }).servername || null;
    const label = sni && context.proxyDomain ? pacSubdomain(sni, context.proxyDomain) : null;
    const device =
      label && /^\d{1,5}$/.test(label) ? context.deviceForPort(Number(label)) : undefined;
    // A dedicated port outranks the name (the chain's first rule).
    const bySni = device !== undefined && outer.attribution.rule !== 'port';
    describeConnection(secure, {
      ...outer,
      ...(bySni
        ? { attribution: { rule: 'sni', deviceUuid: device.uuid }, source: device.source }
        : {}),
    });
    context.serve(secure);
  });
  secure.on('error', (error) => {
    context.logger.debug({ err: error }, 'TLS to the proxy failed');
    secure.destroy();
  });
  socket.resume();
}
