// The proxy daemon's listeners (002 §4.3, §4.4, §5): the shared manual port (8888), an optional
// management port (8889), and one port per device. Each is a plain `net.Server` that tags the
// connection (listener, client, attribution) and hands it to one shared HTTP/1.1 server
// (proxy-anchors §2.5: 50 listeners cost 5 ms and no memory this way); decrypted h2 connections
// go to one shared HTTP/2 server. Management URLs are answered locally on every listener and for
// every client; egress is limited to the source-IP allowlist (others get 403, nothing leaves).
// Traffic attributed to a device must prove it is that device (port-guard.ts: 407/403 otherwise)
// and may reach only destinations the policy allows (destination-policy.ts: 403 otherwise); both
// are refused before anything is forwarded or captured (issue 21).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import https from 'node:https';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type pg from 'pg';
import type { Logger } from 'pino';
import { AddressList } from './address-list.ts';
import { Breakpoints } from './breakpoints/breakpoints.ts';
import type { CaptureWriter } from './capture/capture-writer.ts';
import {
  type ConnectionInfo,
  connectionInfo,
  describeConnection,
  describeSession,
  sessionInfo,
} from './connection-info.ts';
import { DatabaseEvents } from './database-events.ts';
import { DestinationPolicy } from './destination-policy.ts';
import { AllocateLimiter } from './devices/allocate-limiter.ts';
import { DeviceRegistry, type PortRange } from './devices/device-registry.ts';
import { PortGuard } from './devices/port-guard.ts';
import { type ForwardContext, forwardHttp } from './http/forward-http.ts';
import { Http2Origins } from './http/http2-origins.ts';
import { absoluteTarget, acceptableHost, tunnelTarget } from './http/request-target.ts';
import { openTunnel, type TunnelContext } from './http/tunnel.ts';
import { forwardUpgrade } from './http/websocket.ts';
import { ListenerSet } from './listeners.ts';
import { type ManagementContext, serveManagement } from './management/management.ts';
import { isOwnAddress, lookupRefusingSelf } from './own-addresses.ts';
import { DeviceActivity } from './setup/device-activity.ts';
import { SETUP_HOST, type SetupClient } from './setup/setup-routes.ts';
import type { CertificateAuthority } from './tls/certificate-authority.ts';
import { LeafCertificateCache } from './tls/leaf-certificates.ts';
import { PassthroughPolicy } from './tls/passthrough-policy.ts';
import { acceptTlsToProxy, type SecureProxyContext } from './tls/secure-proxy.ts';

export interface DeviceOptions {
  /** The database devices and ports live in (queries run as service_role). */
  pool: pg.Pool;
  /** Base domain with wildcard DNS: PAC at http://<port>.{proxyDomain}/ (002 §4.4). */
  proxyDomain: string;
  portRange: PortRange;
  /** How often the port map is re-read (ports other daemons allocated). */
  refreshIntervalMs?: number;
  /** Device ports one account may hold (default 20). */
  portsPerAccount?: number;
  /** Failed POST /allocate calls one client address may make per minute (default 30). */
  allocateFailuresPerMinute?: number;
  /** Breakpoints (issue 19): held on the settings' patterns, released by resuming the row. */
  breakpoints?: BreakpointSettings;
}

export interface BreakpointSettings {
  /** This daemon's name on the rows it holds; keep it across restarts (daemon.ts stores it). */
  instanceId: string;
  /** Longest hold before the exchange continues on its own (default 5 min). */
  holdTimeoutMs?: number;
  /** Exchanges held at once (default 200). */
  maxHeld?: number;
}

export interface ProxyOptions {
  /** The shared manual port (8888 in production). */
  port: number;
  /** A second listener for the management URLs ({proxy_url}, 8889 in production). */
  managementPort?: number;
  host?: string;
  /**
   * LAN mode (docs/devices.md): every listener also binds this address, which phones on the LAN
   * reach; the set-up pages and PAC files by IP name it.
   */
  lanAddress?: string;
  writer: CaptureWriter;
  /** CIDRs or addresses allowed to send traffic through (002 §5). */
  allowlist: string[];
  /** Bytes of each body kept in the capture. */
  bodyCap?: number;
  /** The project CA: downloadable, and the signer of interception leaves. */
  ca?: CertificateAuthority;
  /** Intercept TLS inside tunnels; on by default when a CA is given. */
  intercept?: boolean;
  /** Host patterns never intercepted (`pinned.example`, `*.apple.com`). */
  passthroughHosts?: string[];
  /** Offer HTTP/2 to intercepted clients by ALPN (default on). */
  http2?: boolean;
  /** Send an HTTP/2 client's requests to origins over HTTP/2 when they offer it (default on). */
  http2Upstream?: boolean;
  /** Extra PEM roots trusted for origin certificates, beside Node's bundled roots. */
  upstreamCa?: string[];
  /** Destinations the proxy may reach (CIDRs, host patterns, `public`); unset means `public`. */
  destinations?: string[];
  /** A connection or tunnel whose client sends nothing is closed after this (default 30 s). */
  firstByteTimeoutMs?: number;
  devices?: DeviceOptions;
  logger: Logger;
}

export interface RunningProxy {
  port: number;
  managementPort: number | undefined;
  registry: DeviceRegistry | undefined;
  breakpoints: Breakpoints | undefined;
  leaves: LeafCertificateCache | null;
  stop(): Promise<void>;
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

const TLS_HANDSHAKE_RECORD = 0x16;

export async function startProxy(options: ProxyOptions): Promise<RunningProxy> {
  const logger = options.logger;
  const bindHost = options.host ?? '127.0.0.1';
  const allowlist = new AddressList(options.allowlist);
  const destinations = new DestinationPolicy(options.destinations);
  // Says which setting would allow it: a developer's own local server is refused by
  // default, and the fix is one flag away.
  const refuseDestination = (host: string) =>
    `destination ${host} is not allowed by this proxy (PROXY_DESTINATIONS; the local stack: ` +
    '--proxy-destinations)';
  const firstByteTimeoutMs = options.firstByteTimeoutMs ?? 30_000;
  const interceptOn = options.ca !== undefined && options.intercept !== false;
  const leaves = interceptOn
    ? await LeafCertificateCache.create(options.ca as CertificateAuthority)
    : null;
  const passthrough = new PassthroughPolicy(options.passthroughHosts);
  const registry = options.devices
    ? new DeviceRegistry({
        pool: options.devices.pool,
        range: options.devices.portRange,
        portsPerAccount: options.devices.portsPerAccount,
        logger,
      })
    : undefined;
  const portGuard = options.devices ? new PortGuard(options.devices.pool) : undefined;
  // Notifications: resumed breakpoints, changed settings, ports allocated anywhere (issue 19).
  const events = options.devices ? new DatabaseEvents(options.devices.pool, logger) : undefined;
  const breakpoints =
    events && options.devices?.breakpoints
      ? new Breakpoints({
          pool: (options.devices as DeviceOptions).pool,
          events,
          ...options.devices.breakpoints,
          logger,
        })
      : undefined;
  const proxyDomain = options.devices?.proxyDomain.toLowerCase();
  const activity = new DeviceActivity();

  const upstreamContext = options.upstreamCa
    ? tls.createSecureContext({ ca: [...tls.rootCertificates, ...options.upstreamCa] })
    : undefined;
  const lookupFor = (port: number) => lookupRefusingSelf(port, ownAddress, destinations.lookup);
  const forwarding: ForwardContext = {
    agent: new http.Agent({ keepAlive: true, maxSockets: 256 }),
    httpsAgent: new https.Agent({
      keepAlive: true,
      maxSockets: 256,
      // One context built once: a `ca` option would be joined into the agent's pool key on every
      // request (27% of the CPU under load when measured).
      ...(upstreamContext ? { secureContext: upstreamContext } : {}),
    }),
    http2Origins:
      options.http2 !== false && options.http2Upstream !== false
        ? new Http2Origins({ secureContext: upstreamContext, lookupFor, logger })
        : undefined,
    bodyCap: options.bodyCap ?? 1024 * 1024,
    deliver: (capture) => {
      activity.observe(capture);
      options.writer.enqueue(capture);
    },
    breakpoints,
    lookupFor,
  };

  const listeners = new ListenerSet({
    hosts: [...new Set([bindHost, ...(options.lanAddress ? [options.lanAddress] : [])])],
    accept: (socket, port) => accept(socket, port),
    logger,
  });
  const http1 = http.createServer({ requireHostHeader: false });
  const h2 = http2.createServer();
  let pendingSessionInfo: ConnectionInfo | undefined;

  const attribute = (
    listenerPort: number,
    ip: string | null,
  ): Pick<ConnectionInfo, 'attribution' | 'source'> => {
    const byPort = registry?.deviceForPort(listenerPort);
    if (byPort && !listeners.isFixed(listenerPort)) {
      return { attribution: { rule: 'port', deviceUuid: byPort.uuid }, source: byPort.source };
    }
    const byIp = registry?.deviceForIp(ip);
    if (byIp) return { attribution: { rule: 'ip', deviceUuid: byIp }, source: 'manual' };
    return { attribution: { rule: 'proxy', deviceUuid: null }, source: 'manual' };
  };

  const accept = (socket: net.Socket, listenerPort: number) => {
    socket.on('error', () => undefined);
    socket.setNoDelay(true);
    const ip = socket.remoteAddress ?? null;
    const info: ConnectionInfo = {
      client: { ip, port: socket.remotePort ?? null },
      listenerPort,
      ...attribute(listenerPort, ip),
    };
    describeConnection(socket, info);
    // A client that connects and says nothing is not kept: the HTTP server's own timeouts only
    // start once it has the connection.
    socket.setTimeout(firstByteTimeoutMs, () => socket.destroy());
    // A TLS record first means TLS to the proxy itself (an HTTPS proxy); anything else is HTTP.
    socket.once('data', (first: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(first);
      if (first[0] === TLS_HANDSHAKE_RECORD && leaves) {
        // TLS to the proxy is for clients that may use it: others cost no certificate work.
        if (!allowlist.allows(ip)) {
          socket.destroy();
          return;
        }
        void acceptTlsToProxy(socket, info, secureProxy);
        return;
      }
      http1.emit('connection', socket);
      socket.resume();
    });
  };
  const secureProxy: SecureProxyContext = {
    leaves: leaves as LeafCertificateCache,
    proxyDomain,
    deviceForPort: (port) => registry?.deviceForPort(port),
    serve: (socket) => http1.emit('connection', socket),
    logger,
  };

  const ensureListener = (port: number) => listeners.ensure(port);
  /** The fixed ports as bound (a port 0 option becomes a real port at start). */
  const opened: { shared: number; management: number | undefined } = {
    shared: options.port,
    management: options.managementPort,
  };
  const limiter = options.devices
    ? new AllocateLimiter(options.devices.pool, options.devices.allocateFailuresPerMinute)
    : undefined;
  const rebound = (deviceUuid: string) => portGuard?.forget(deviceUuid);

  const management: ManagementContext = {
    writer: options.writer,
    ca: options.ca,
    leaves,
    passthrough,
    devices:
      registry && proxyDomain && options.devices
        ? {
            registry,
            proxyDomain,
            ensureListener,
            limiter: limiter as AllocateLimiter,
            rebound,
            logger,
          }
        : undefined,
    setup:
      registry && limiter
        ? {
            registry,
            limiter,
            activity,
            ca: options.ca,
            ports: () => opened,
            ensureListener,
            rebound,
            logger,
          }
        : undefined,
    listeningPorts: () => listeners.ports,
  };

  const ownAddress = { proxyDomain, bindHost, listening: (port: number) => listeners.has(port) };
  const isOwn = (url: URL) =>
    url.hostname === SETUP_HOST ||
    isOwnAddress(
      url.hostname,
      Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      ownAddress,
    );

  const tunnelContext: TunnelContext = {
    deliver: forwarding.deliver,
    passthrough,
    leaves,
    http2: options.http2 !== false,
    firstByteTimeoutMs,
    lookupFor: forwarding.lookupFor,
    serveHttp1: (socket) => http1.emit('connection', socket),
    serveHttp2: (socket, info) => {
      pendingSessionInfo = info;
      try {
        h2.emit('connection', socket);
      } finally {
        pendingSessionInfo = undefined;
      }
    },
    logger,
  };

  /** The management URLs, with any failure (a client gone mid-body, a port that cannot open,
   * the database away) answered 503 or the connection cut, never a crash. */
  const answerLocally = (
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    host: string | undefined,
    proxied: boolean,
  ) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    admittedDevice(info, request.headers['proxy-authorization'])
      // Without the database the management URLs still answer, only for no device in particular.
      .catch(() => null)
      .then((device) => {
        // A request sent to us as its proxy proves the device's proxy is set (the set-up live
        // check); one sent to our address directly (the set-up page opened by IP) does not.
        if (device && proxied) activity.noteRequest(device.uuid, 'http', device.via);
        const client: SetupClient = {
          ip: info.client.ip,
          reachedAddress: request.socket.localAddress ?? bindHost,
          device,
          fixedHost: host?.replace(/:\d+$/, '').toLowerCase() === SETUP_HOST,
          arrivedOnPort: info.listenerPort,
          proxied,
        };
        return serveManagement(request, response, path, host, client, management);
      })
      .catch((error: unknown) => {
        logger.warn({ err: error, path }, 'management request failed');
        if (response.headersSent) response.destroy();
        else sendJson(response, 503, { error: 'unavailable', message: 'try again shortly' });
      });
  };

  /** The device a connection may act as: its port's (when admitted) or its address's. */
  const admittedDevice = async (
    info: ConnectionInfo,
    proxyAuthorization: string | undefined,
  ): Promise<SetupClient['device']> => {
    const { rule, deviceUuid } = info.attribution;
    if (!deviceUuid) return null;
    if (rule === 'ip') return { uuid: deviceUuid, via: 'shared-port' };
    if (!portGuard) return null;
    const admission = await portGuard.admit(deviceUuid, info.client.ip, proxyAuthorization);
    return admission.ok ? { uuid: deviceUuid, via: 'device-port' } : null;
  };

  type Refusal = { status: 403 | 407; message: string };
  /**
   * What is checked after the synchronous gates, before a request, tunnel or upgrade is
   * forwarded: that traffic attributed to a device comes from that device (by port or SNI), then
   * that the destination's resolved addresses are allowed.
   */
  const vet = async (
    info: ConnectionInfo,
    proxyAuthorization: string | undefined,
    host: string,
  ): Promise<Refusal | null> => {
    const { rule, deviceUuid } = info.attribution;
    if (portGuard && deviceUuid && (rule === 'port' || rule === 'sni')) {
      const admission = await portGuard.admit(deviceUuid, info.client.ip, proxyAuthorization);
      if (!admission.ok) {
        logger.info({ client: info.client.ip, device: deviceUuid }, admission.message);
        return admission;
      }
    }
    if (!(await destinations.permits(host))) {
      logger.info({ host }, refuseDestination(host));
      return { status: 403, message: refuseDestination(host) };
    }
    return null;
  };
  const PROXY_AUTHENTICATE = 'Basic realm="capture-proxy", charset="UTF-8"';
  const sendRefusal = (response: ServerResponse, refusal: Refusal) => {
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
  };
  const refuseSocket = (socket: Duplex, refusal: Refusal) =>
    socket.end(
      `HTTP/1.1 ${refusal.status === 407 ? '407 Proxy Authentication Required' : '403 Forbidden'}\r\n` +
        (refusal.status === 407 ? `proxy-authenticate: ${PROXY_AUTHENTICATE}\r\n` : '') +
        'content-length: 0\r\nconnection: close\r\n\r\n',
    );
  const failVetting = (error: unknown) => {
    logger.warn({ err: error }, 'could not vet a request; refusing it');
    return { status: 403, message: 'the proxy could not check this request; try again' } as const;
  };

  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    const raw = request.url ?? '/';
    const inTunnel = info.target;
    // Inside a tunnel the CONNECT fixed the destination (allowlist checked then); on a listener,
    // origin-form is addressed to the proxy itself and absolute-form is proxy traffic (002 §4.3).
    const url = inTunnel
      ? tunnelTarget(inTunnel, raw)
      : raw.startsWith('/')
        ? tunnelTarget({ host: 'proxy', port: 80, scheme: 'http' }, raw.replace(/^\/+/, '/'))
        : absoluteTarget(raw);
    if (!url) {
      request.resume();
      sendJson(response, 400, { error: 'bad_request', message: 'request target is not usable' });
      return;
    }
    if ((!inTunnel && raw.startsWith('/')) || isOwn(url)) {
      answerLocally(
        request,
        response,
        url.pathname,
        inTunnel || raw.startsWith('/') ? request.headers.host : url.host,
        Boolean(inTunnel) || !raw.startsWith('/'),
      );
      return;
    }
    if (!inTunnel) {
      if (!allowlist.allows(info.client.ip)) {
        request.resume();
        sendJson(response, 403, { error: 'forbidden', message: 'source address not allowed' });
        return;
      }
      if (!destinations.allows(url.hostname)) {
        request.resume();
        sendJson(response, 403, { error: 'forbidden', message: refuseDestination(url.hostname) });
        return;
      }
      if (url.protocol !== 'http:') {
        request.resume();
        sendJson(response, 400, {
          error: 'bad_request',
          message: 'only http:// is forwarded; use CONNECT for https',
        });
        return;
      }
      vet(info, request.headers['proxy-authorization'], url.hostname)
        .catch(failVetting)
        .then((refusal) => {
          if (!refusal) {
            forwardHttp(request, response, url, info, forwarding);
            return;
          }
          request.resume();
          sendRefusal(response, refusal);
        });
      return;
    }
    forwardHttp(request, response, url, info, forwarding);
  };
  http1.on('request', handle);
  // With a listener here Node does not answer 100 itself: forwardHttp relays the origin's.
  http1.on('checkContinue', handle);

  const refuse = (socket: Duplex, status: '400 Bad Request' | '403 Forbidden') =>
    socket.end(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);

  http1.on('connect', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    if (!allowlist.allows(info.client.ip)) {
      refuse(socket, '403 Forbidden');
      return;
    }
    const authority = /^\[?([^\]]+?)\]?:\d+$/.exec(request.url ?? '')?.[1] ?? '';
    if (!acceptableHost(authority)) {
      refuse(socket, '400 Bad Request');
      return;
    }
    if (!destinations.allows(authority)) {
      logger.info({ host: authority }, refuseDestination(authority));
      refuse(socket, '403 Forbidden');
      return;
    }
    vet(info, request.headers['proxy-authorization'], authority)
      .catch(failVetting)
      .then((refusal) => {
        if (refusal) refuseSocket(socket, refusal);
        else openTunnel(request, socket, head, info, tunnelContext);
      });
  });

  http1.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const info = connectionInfo(request.socket) as ConnectionInfo;
    const raw = request.url ?? '/';
    const url = info.target ? tunnelTarget(info.target, raw) : absoluteTarget(raw);
    // The proxy's own URLs do not upgrade; they are never forwarded either.
    if (!url || isOwn(url) || (!info.target && raw.startsWith('/'))) {
      refuse(socket, '400 Bad Request');
      return;
    }
    if (!destinations.allows(url.hostname) || (!info.target && !allowlist.allows(info.client.ip))) {
      refuse(socket, '403 Forbidden');
      return;
    }
    // Inside a tunnel the CONNECT was vetted.
    if (info.target) {
      forwardUpgrade(request, socket, head, url, info, forwarding);
      return;
    }
    vet(info, request.headers['proxy-authorization'], url.hostname)
      .catch(failVetting)
      .then((refusal) => {
        if (refusal) refuseSocket(socket, refusal);
        else forwardUpgrade(request, socket, head, url, info, forwarding);
      });
  });

  // Malformed requests: 400 to that client only (Node's parser error), never a crash.
  http1.on('clientError', (error, socket) => {
    logger.debug({ err: error }, 'malformed request');
    if (socket.writable) refuse(socket, '400 Bad Request');
    else socket.destroy();
  });

  h2.on('session', (session) => {
    if (pendingSessionInfo) describeSession(session, pendingSessionInfo);
    session.on('error', (error) => logger.debug({ err: error }, 'HTTP/2 session error'));
  });
  h2.on('request', (request: Http2ServerRequest, response: Http2ServerResponse) => {
    const info = sessionInfo(request.stream.session as http2.Http2Session) as ConnectionInfo;
    const url = tunnelTarget(info.target as NonNullable<ConnectionInfo['target']>, request.url);
    if (!url || isOwn(url)) {
      // Management URLs are answered over HTTP/1.1 only, and never forwarded.
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: 'bad_request', message: 'request target is not usable' }),
      );
      return;
    }
    forwardHttp(request, response, url, info, forwarding);
  });

  if (registry) {
    if (options.ca) await registry.registerCa(options.ca.certPem, options.ca.fingerprint256);
    await registry.registerPool();
    await registry.refresh();
  }
  // Before any listener opens: what this instance held before a restart is closed and the
  // patterns are loaded, so no request is served unheld by a pattern that is set (the change
  // feed's connect below reads them again, with the ports, for what changed in between).
  await breakpoints?.start();
  const mainPort = await listeners.openFixed(options.port);
  const managementPort =
    options.managementPort === undefined
      ? undefined
      : await listeners.openFixed(options.managementPort);
  opened.shared = mainPort;
  opened.management = managementPort;
  // Restart: every device keeps its port (002 §2.3).
  for (const port of registry?.ports ?? []) {
    await ensureListener(port).catch(() => undefined);
  }
  // Ports another daemon allocated open here too; ports of deleted devices stop listening.
  const syncListeners = async (devices: DeviceRegistry) => {
    await devices.refresh();
    const allocated = new Set(devices.ports);
    for (const port of listeners.ports) if (!allocated.has(port)) listeners.close(port);
    await Promise.all(devices.ports.map((port) => ensureListener(port).catch(() => undefined)));
  };
  let resyncLater: NodeJS.Timeout | undefined;
  const resync = async () => {
    if (!registry) return;
    await syncListeners(registry).then(
      () => {
        // A port allocated here in the last second is kept against the read: read again once
        // that second is over, so a change that raced the allocation is not missed.
        if (registry.settling && !resyncLater) {
          resyncLater = setTimeout(() => {
            resyncLater = undefined;
            void resync();
          }, 1100);
          resyncLater.unref();
        }
      },
      (error: unknown) => logger.warn({ err: error }, 'device refresh failed'),
    );
  };
  const refresher = registry
    ? setInterval(resync, options.devices?.refreshIntervalMs ?? 30_000)
    : undefined;
  refresher?.unref();
  // A port allocated, moved or freed anywhere (/allocate on any daemon, a device inserted over
  // REST) opens or closes here within a second: one NOTIFY, then one re-read shared by a burst.
  let resyncSoon: NodeJS.Timeout | undefined;
  events?.on('proxy_device_ports_changed', () => {
    resyncSoon ??= setTimeout(() => {
      resyncSoon = undefined;
      void resync();
    }, 50);
  });
  events?.onConnected(resync);
  await events?.start();

  return {
    port: mainPort,
    managementPort,
    registry,
    breakpoints,
    leaves,
    async stop() {
      if (refresher) clearInterval(refresher);
      if (resyncSoon) clearTimeout(resyncSoon);
      if (resyncLater) clearTimeout(resyncLater);
      // Held clients are answered (503) and their rows closed before the connections go.
      await breakpoints?.stop();
      await events?.stop();
      await listeners.closeAll();
      forwarding.agent.destroy();
      forwarding.httpsAgent.destroy();
      forwarding.http2Origins?.close();
    },
  };
}
