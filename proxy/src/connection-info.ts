// What the proxy knows about a client connection, attached to the socket the HTTP servers see:
// where it came in (listener, client address), which device it is attributed to and by which
// rule (002 §4.4: dedicated port, then SNI, then client IP, then the proxy's own identity), and
// for a tunnel its target and the client-side TLS details. Every capture copies it.
import type { Http2Session } from 'node:http2';

export type AttributionRule = 'port' | 'sni' | 'ip' | 'proxy';

/**
 * `entries.payload.source` of traffic on a device's own port (001 §2.2 device_status.source):
 * `pac` for a device following its PAC file; `cdp` and `farm` for the farm's browser and
 * sandboxed shell (private.farm_devices), whose ports only the farm uses.
 */
export type PortSource = 'pac' | 'cdp' | 'farm';

export interface Attribution {
  rule: AttributionRule;
  deviceUuid: string | null;
}

export interface TlsDetails {
  sni: string | null;
  alpn: string | null;
  version: string | null;
  cipher: string | null;
  intercepted: boolean;
}

export interface ConnectionInfo {
  client: { ip: string | null; port: number | null };
  listenerPort: number;
  /** The device port's source (by port or SNI), `manual` otherwise (the shared port, 002 §4.3). */
  source: PortSource | 'manual';
  attribution: Attribution;
  /** For a connection inside a CONNECT tunnel: the target every request on it goes to. */
  target?: { host: string; port: number; scheme: 'http' | 'https' };
  /** For an intercepted tunnel: the TLS the client negotiated with the proxy. */
  tls?: TlsDetails;
}

const bySocket = new WeakMap<object, ConnectionInfo>();
const bySession = new WeakMap<Http2Session, ConnectionInfo>();

export function describeConnection(socket: object, info: ConnectionInfo): void {
  bySocket.set(socket, info);
}

export function connectionInfo(socket: object): ConnectionInfo | undefined {
  return bySocket.get(socket);
}

/** HTTP/2 requests expose only a proxy of their socket, so their info hangs on the session. */
export function describeSession(session: Http2Session, info: ConnectionInfo): void {
  bySession.set(session, info);
}

export function sessionInfo(session: Http2Session): ConnectionInfo | undefined {
  return bySession.get(session);
}

/** `[::1]` style for URLs, plain for sockets. */
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
