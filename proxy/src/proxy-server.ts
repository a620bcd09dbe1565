// The proxy daemon's core, wired in one place (002 §4.3, §4.4, §5): the shared manual port
// (8888), an optional management port (8889), and one port per device. Each is a plain
// `net.Server` that tags the connection (connection-accept.ts) and hands it to one shared
// HTTP/1.1 server (proxy-anchors §2.5: 50 listeners cost 5 ms and no memory this way); decrypted
// h2 connections go to one shared HTTP/2 server. request-routing.ts sends each request on by kind:
// management URLs answered locally on every listener, the rest through the allowlist, the
// destination policy and the device check (egress-gate.ts) before anything leaves.
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import tls from 'node:tls';
import { AddressList } from './address-list.ts';
import { Breakpoints } from './breakpoints/breakpoints.ts';
import { type AcceptContext, acceptConnection } from './connection-accept.ts';
import { type ConnectionInfo, describeSession } from './connection-info.ts';
import { DatabaseEvents } from './database-events.ts';
import { DestinationPolicy } from './destination-policy.ts';
import { AllocateLimiter } from './devices/allocate-limiter.ts';
import { DeviceRegistry } from './devices/device-registry.ts';
import { PortGuard } from './devices/port-guard.ts';
import { DevicePortListeners } from './devices/port-listeners.ts';
import { EgressGate } from './egress-gate.ts';
import type { ForwardContext } from './http/forward-context.ts';
import { Http2Origins } from './http/http2-origins.ts';
import type { TunnelContext } from './http/tunnel.ts';
import { ListenerSet } from './listeners.ts';
import { answerLocally, type LocalAnswerContext } from './management/answer-locally.ts';
import type { ManagementContext } from './management/management.ts';
import { isOwnAddress, lookupRefusingSelf } from './own-addresses.ts';
import type { DeviceOptions, ProxyOptions, RunningProxy } from './proxy-options.ts';
import { type RoutingContext, routeHttp1Requests, routeHttp2Requests } from './request-routing.ts';
import { DeviceActivity } from './setup/device-activity.ts';
import { SETUP_HOST } from './setup/setup-routes.ts';
import type { CertificateAuthority } from './tls/certificate-authority.ts';
import { LeafCertificateCache } from './tls/leaf-certificates.ts';
import { PassthroughPolicy } from './tls/passthrough-policy.ts';

export async function startProxy(options: ProxyOptions): Promise<RunningProxy> {
  const logger = options.logger;
  const bindHost = options.host ?? '127.0.0.1';
  const allowlist = new AddressList(options.allowlist);
  const destinations = new DestinationPolicy(options.destinations);
  const firstByteTimeoutMs = options.firstByteTimeoutMs ?? 30_000;
  const interceptOn = options.ca !== undefined && options.intercept !== false;
  const leaves = interceptOn
    ? await LeafCertificateCache.create(options.ca as CertificateAuthority)
    : null;
  const passthrough = new PassthroughPolicy(options.passthroughHosts);
  const worker = options.worker;
  worker?.sharePassthrough(passthrough);
  const registry = options.devices
    ? new DeviceRegistry({
        pool: options.devices.pool,
        range: options.devices.portRange,
        portsPerAccount: options.devices.portsPerAccount,
        onLearned: worker ? (learned) => worker.shareDevice(learned) : undefined,
        logger,
      })
    : undefined;
  const portGuard = options.devices ? new PortGuard(options.devices.pool) : undefined;
  // Notifications: resumed breakpoints, changed settings, ports allocated anywhere.
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
  const activity = worker?.activity ?? new DeviceActivity();

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
    accept: (socket, port) => acceptConnection(socket, port, accepting),
    logger,
  });
  const http1 = http.createServer({ requireHostHeader: false });
  const h2 = http2.createServer();
  const accepting: AcceptContext = {
    registry,
    isFixedPort: (port) => listeners.isFixed(port),
    allowlist,
    leaves,
    firstByteTimeoutMs,
    secureProxy: {
      leaves: leaves as LeafCertificateCache,
      proxyDomain,
      deviceForPort: (port) => registry?.deviceForPort(port),
      serve: (socket) => http1.emit('connection', socket),
      logger,
    },
    serveHttp1: (socket) => http1.emit('connection', socket),
  };

  const ensureListener = (port: number) => listeners.ensure(port);
  // A sibling worker's /allocate or set-up link: its phone's next connection may come here.
  worker?.onSiblingDevice((learned) => {
    registry?.learn(learned);
    if (learned.port !== null) ensureListener(learned.port).catch(() => undefined);
  });
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
    worker,
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
  const localAnswers: LocalAnswerContext = { management, portGuard, activity, bindHost, logger };

  const ownAddress = { proxyDomain, bindHost, listening: (port: number) => listeners.has(port) };
  const isOwn = (url: URL) =>
    url.hostname === SETUP_HOST ||
    isOwnAddress(
      url.hostname,
      Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      ownAddress,
    );

  // A tunnel hands a decrypted h2 connection over with its details: the HTTP/2 server opens the
  // session within that emit, and the session takes them on.
  let pendingSessionInfo: ConnectionInfo | undefined;
  const tunnels: TunnelContext = {
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
  h2.on('session', (session) => {
    if (pendingSessionInfo) describeSession(session, pendingSessionInfo);
    session.on('error', (error) => logger.debug({ err: error }, 'HTTP/2 session error'));
  });

  const routing: RoutingContext = {
    allowlist,
    destinations,
    gate: new EgressGate({ portGuard, destinations, logger }),
    isOwn,
    answerLocally: (request, response, path, host, proxied) =>
      answerLocally(request, response, path, host, proxied, localAnswers),
    forwarding,
    tunnels,
    logger,
  };
  routeHttp1Requests(http1, routing);
  routeHttp2Requests(h2, routing);

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
  const devicePorts = registry
    ? new DevicePortListeners({
        registry,
        listeners,
        events,
        refreshIntervalMs: options.devices?.refreshIntervalMs,
        logger,
      })
    : undefined;
  // Restart: every device keeps its port (002 §2.3).
  await devicePorts?.openAllocated();
  devicePorts?.follow();
  await events?.start();

  return {
    port: mainPort,
    managementPort,
    registry,
    breakpoints,
    leaves,
    async stop() {
      devicePorts?.stop();
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
