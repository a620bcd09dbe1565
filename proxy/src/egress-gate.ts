// The checks a request, tunnel or upgrade passes before anything is forwarded or captured
// (002 §5; docs/proxy.md "Listeners"): traffic attributed to a device must come from that device
// (port-guard.ts: 407/403 otherwise), and the destination's resolved addresses must be allowed
// (destination-policy.ts: 403 otherwise). Also the answers that refuse, on a response or a socket.
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ConnectionInfo } from './connection-info.ts';
import type { DestinationPolicy } from './destination-policy.ts';
import type { PortGuard } from './devices/port-guard.ts';

export type Refusal = { status: 403 | 407; message: string };

const PROXY_AUTHENTICATE = 'Basic realm="capture-proxy", charset="UTF-8"';

/**
 * Says which setting would allow it: a developer's own local server is refused by default, and
 * the fix is one flag away.
 */
export function destinationRefusal(host: string): string {
  return (
    `destination ${host} is not allowed by this proxy (PROXY_DESTINATIONS; the local stack: ` +
    '--proxy-destinations)'
  );
}

export class EgressGate {
  private readonly portGuard: PortGuard | undefined;
  private readonly destinations: DestinationPolicy;
  private readonly logger: Logger;

  constructor(options: {
    portGuard: PortGuard | undefined;
    destinations: DestinationPolicy;
    logger: Logger;
  }) {
    this.portGuard = options.portGuard;
    this.destinations = options.destinations;
    this.logger = options.logger;
  }

  /**
   * What is checked after the synchronous gates, before a request, tunnel or upgrade is
   * forwarded: that traffic attributed to a device comes from that device (by port or SNI), then
   * that the destination's resolved addresses are allowed. Never rejects: a check that cannot be
   * made refuses.
   */
  vet(
    info: ConnectionInfo,
    proxyAuthorization: string | undefined,
    host: string,
  ): Promise<Refusal | null> {
    return this.check(info, proxyAuthorization, host).catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not vet a request; refusing it');
      return { status: 403, message: 'the proxy could not check this request; try again' } as const;
    });
  }

  private async check(
    info: ConnectionInfo,
    proxyAuthorization: string | undefined,
    host: string,
  ): Promise<Refusal | null> {
    const { rule, deviceUuid } = info.attribution;
    if (this.portGuard && deviceUuid && (rule === 'port' || rule === 'sni')) {
      const admission = await this.portGuard.admit(deviceUuid, info.client.ip, proxyAuthorization);
      if (!admission.ok) {
        this.logger.info({ client: info.client.ip, device: deviceUuid }, admission.message);
        return admission;
      }
    }
    if (!(await this.destinations.permits(host))) {
      this.logger.info({ host }, destinationRefusal(host));
      return { status: 403, message: destinationRefusal(host) };
    }
    return null;
  }
}

/** A refusal as the answer to an HTTP request (407 asks for the device's bundle). */
export function sendRefusal(response: ServerResponse, refusal: Refusal): void {
  response.writeHead(refusal.status, {
    'content-type': 'application/json',
    connection: 'close',
    ...(refusal.status === 407 ? { 'proxy-authenticate': PROXY_AUTHENTICATE } : {}),
  });
  response.end(
    JSON.stringify({
      error: refusal.status === 407 ? 'proxy_authentication_required' : 'forbidden',
      message: refusal.message,
    }),
  );
}

/** A refusal written on a CONNECT or upgrade socket, which is then closed. */
export function refuseSocket(socket: Duplex, refusal: Refusal): void {
  socket.end(
    `HTTP/1.1 ${refusal.status === 407 ? '407 Proxy Authentication Required' : '403 Forbidden'}\r\n` +
      (refusal.status === 407 ? `proxy-authenticate: ${PROXY_AUTHENTICATE}\r\n` : '') +
      'content-length: 0\r\nconnection: close\r\n\r\n',
  );
}

/** An empty answer with this status on a raw socket, which is then closed. */
export function closeWithStatus(socket: Duplex, status: '400 Bad Request' | '403 Forbidden'): void {
  socket.end(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
}
