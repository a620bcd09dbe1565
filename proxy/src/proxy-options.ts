// How the proxy is started and what a running one offers (002 §4.3, §4.4, §5; each setting's
// environment variable and default: docs/proxy.md "Configuration").
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Breakpoints } from './breakpoints/breakpoints.ts';
import type { CaptureWriter, CaptureWriterStats } from './capture/capture-writer.ts';
import type { DeviceRegistry, LearnedDevice, PortRange } from './devices/device-registry.ts';
import type { DeviceActivity } from './setup/device-activity.ts';
import type { CertificateAuthority } from './tls/certificate-authority.ts';
import type { LeafCertificateCache } from './tls/leaf-certificates.ts';
import type { PassthroughPolicy } from './tls/passthrough-policy.ts';

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
  /**
   * Breakpoints (docs/proxy.md "Breakpoints"): held on the settings' patterns, released by
   * resuming the row.
   */
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
  /** Set in a worker process of a daemon (docs/proxy.md "Worker processes"). */
  worker?: WorkerShare;
  logger: Logger;
}

/**
 * What one worker process shares with its siblings (workers/worker-link.ts): the set-up pages'
 * view of devices (any worker may serve the page, any other the phone's requests), the bindings
 * its /allocate and set-up links make (the phone's next connection may go to any worker), the
 * hosts learned to pass through (the client's next tunnel may go to any worker), and
 * every worker's capture counts, summed on /health.
 */
export interface WorkerShare {
  index: number;
  count: number;
  activity: DeviceActivity;
  /** Resolves once the siblings have it. */
  shareDevice(learned: LearnedDevice): Promise<void>;
  sharePassthrough(passthrough: PassthroughPolicy): void;
  onSiblingDevice(handler: (learned: LearnedDevice) => void): void;
  captures(): WorkerCaptures;
}

export interface WorkerCaptures {
  total: CaptureWriterStats;
  /** Each worker's own counts, as it last reported them (`at`), with its process id. */
  workers: Array<CaptureWriterStats & { index: number; pid: number; at: string }>;
}

export interface RunningProxy {
  port: number;
  managementPort: number | undefined;
  registry: DeviceRegistry | undefined;
  breakpoints: Breakpoints | undefined;
  leaves: LeafCertificateCache | null;
  stop(): Promise<void>;
}
