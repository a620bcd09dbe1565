// The proxy daemon as one unit: database pool, capture writer (spool under the data dir), the
// project CA (under the data dir), and the listeners. The local stack starts it in-process;
// `cli.ts` runs it on its own with the settings from the environment (docs/proxy.md).
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AddressList } from './address-list.ts';
import { DEFAULT_HOLD_TIMEOUT_MS, DEFAULT_MAX_HELD } from './breakpoints/breakpoints.ts';
import { CaptureWriter } from './capture/capture-writer.ts';
import { DestinationPolicy } from './destination-policy.ts';
import { DEFAULT_ALLOCATE_FAILURES_PER_MINUTE } from './devices/allocate-limiter.ts';
import { DEFAULT_PORTS_PER_ACCOUNT } from './devices/device-registry.ts';
import type { RunningProxy } from './proxy-options.ts';
import { startProxy } from './proxy-server.ts';
import { loadOrCreateCertificateAuthority } from './tls/certificate-authority.ts';
import type { WorkerLink } from './workers/worker-link.ts';
import { gatherWorkerSpools, workerSpoolDir } from './workers/worker-spools.ts';

export interface DaemonConfig {
  dbUrl: string;
  /** Holds ca.pem/ca.key and the capture spool. */
  dataDir: string;
  host: string;
  /** LAN mode: listeners also bind this address (PROXY_LAN_ADDRESS; docs/proxy.md). */
  lanAddress?: string;
  port: number;
  managementPort: number;
  proxyDomain: string;
  portRange: { start: number; end: number };
  allowlist: string[];
  passthroughHosts: string[];
  bodyCap: number;
  http2: boolean;
  /** Extra PEM roots for origin certificates (tests, private CAs). */
  upstreamCa?: string[];
  /** Destinations the proxy may reach; unset means `public` (PROXY_DESTINATIONS). */
  destinations?: string[];
  /** Device ports one account may hold (PROXY_PORTS_PER_ACCOUNT, default 20). */
  portsPerAccount?: number;
  /** Failed /allocate calls per client address and minute (default 30). */
  allocateFailuresPerMinute?: number;
  /** Longest breakpoint hold (PROXY_BREAKPOINT_TIMEOUT_MS, default 5 min). */
  breakpointTimeoutMs?: number;
  /** Exchanges held at once (PROXY_BREAKPOINT_MAX_HELD, default 200). */
  breakpointMaxHeld?: number;
  /**
   * Processes serving traffic (PROXY_WORKERS, default `defaultWorkers()`; docs/proxy.md "Worker
   * processes"). Only the CLI runs several: `startProxyDaemon` is always one of them.
   */
  workers?: number;
}

export interface RunningDaemon {
  proxy: RunningProxy;
  writer: CaptureWriter;
  stop(): Promise<void>;
}

const list = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/**
 * A setting the proxy builds something from at start (an address list, a policy, a file) is
 * tried here, so a bad one is named as a setting (cli.ts: one line, exit 2), not thrown later
 * as a stack trace.
 */
function buildable(build: (value: string) => unknown) {
  return (value: string | undefined, context: z.RefinementCtx) => {
    if (value === undefined) return;
    try {
      build(value);
    } catch (error) {
      context.addIssue({ code: 'custom', message: (error as Error).message });
    }
  };
}

/**
 * Worker processes when PROXY_WORKERS is unset: one per core but one, which is left to the
 * kernel's packet processing, the primary and whatever else the host runs; so one process on a
 * two-core machine, where two workers measured slower than one (docs/proxy.md "Worker processes").
 */
export function defaultWorkers(): number {
  return Math.max(1, availableParallelism() - 1);
}

/** Settings from the environment; each has a local default (docs/proxy.md lists them). */
const EnvironmentConfig = z.object({
  PROXY_DB_URL: z.string().min(1, 'PROXY_DB_URL (a Postgres URL) is required'),
  PROXY_DATA_DIR: z.string().default('.proxy'),
  PROXY_HOST: z.string().default('127.0.0.1'),
  PROXY_LAN_ADDRESS: z.union([z.ipv4(), z.ipv6()]).optional(),
  PROXY_PORT: z.coerce.number().int().min(0).max(65_535).default(8888),
  PROXY_MANAGEMENT_PORT: z.coerce.number().int().min(0).max(65_535).default(8889),
  PROXY_DOMAIN: z.string().default('proxy.localhost'),
  PROXY_DEVICE_PORTS: z
    .string()
    .regex(/^\d+-\d+$/, 'PROXY_DEVICE_PORTS is a range like 20000-20999')
    .default('20000-20999'),
  PROXY_ALLOWLIST: z
    .string()
    .default('127.0.0.0/8,::1/128')
    .superRefine(buildable((value) => new AddressList(list(value)))),
  PROXY_PASSTHROUGH_HOSTS: z.string().default(''),
  PROXY_BODY_CAP: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 * 1024),
  PROXY_HTTP2: z.enum(['on', 'off']).default('on'),
  PROXY_DESTINATIONS: z
    .string()
    .optional()
    .superRefine(buildable((value) => new DestinationPolicy(list(value)))),
  PROXY_PORTS_PER_ACCOUNT: z.coerce.number().int().min(1).default(DEFAULT_PORTS_PER_ACCOUNT),
  PROXY_ALLOCATE_FAILURES_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_ALLOCATE_FAILURES_PER_MINUTE),
  PROXY_UPSTREAM_CA_FILE: z
    .string()
    .optional()
    .superRefine(buildable((path) => readFileSync(path, 'utf8'))),
  PROXY_BREAKPOINT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(24 * 3_600_000)
    .default(DEFAULT_HOLD_TIMEOUT_MS),
  PROXY_BREAKPOINT_MAX_HELD: z.coerce.number().int().min(0).default(DEFAULT_MAX_HELD),
  PROXY_WORKERS: z.coerce.number().int().min(1).max(256).default(defaultWorkers()),
});

export function configFromEnvironment(env: NodeJS.ProcessEnv): DaemonConfig {
  const parsed = EnvironmentConfig.parse(env);
  const [start, end] = parsed.PROXY_DEVICE_PORTS.split('-').map(Number) as [number, number];
  return {
    dbUrl: parsed.PROXY_DB_URL,
    dataDir: parsed.PROXY_DATA_DIR,
    host: parsed.PROXY_HOST,
    lanAddress: parsed.PROXY_LAN_ADDRESS,
    port: parsed.PROXY_PORT,
    managementPort: parsed.PROXY_MANAGEMENT_PORT,
    proxyDomain: parsed.PROXY_DOMAIN,
    portRange: { start, end },
    allowlist: list(parsed.PROXY_ALLOWLIST),
    passthroughHosts: list(parsed.PROXY_PASSTHROUGH_HOSTS),
    bodyCap: parsed.PROXY_BODY_CAP,
    http2: parsed.PROXY_HTTP2 === 'on',
    destinations:
      parsed.PROXY_DESTINATIONS === undefined ? undefined : list(parsed.PROXY_DESTINATIONS),
    portsPerAccount: parsed.PROXY_PORTS_PER_ACCOUNT,
    allocateFailuresPerMinute: parsed.PROXY_ALLOCATE_FAILURES_PER_MINUTE,
    breakpointTimeoutMs: parsed.PROXY_BREAKPOINT_TIMEOUT_MS,
    breakpointMaxHeld: parsed.PROXY_BREAKPOINT_MAX_HELD,
    workers: parsed.PROXY_WORKERS,
    upstreamCa: parsed.PROXY_UPSTREAM_CA_FILE
      ? [readFileSync(parsed.PROXY_UPSTREAM_CA_FILE, 'utf8')]
      : undefined,
  };
}

/**
 * This daemon's name on the breakpoints it holds, kept in the data dir so a restart recognizes
 * (and closes) what it held before; another data dir is another instance.
 */
export function proxyInstanceId(dataDir: string): string {
  const file = join(dataDir, 'instance-id');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const id = `${hostname()}/${randomUUID()}`;
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

/**
 * One daemon process; with `worker`, one of several (workers/primary.ts) that serve the same
 * ports: it spools to its own folder, holds breakpoints under its own instance name, and holds
 * its share of `breakpointMaxHeld`.
 */
export async function startProxyDaemon(
  config: DaemonConfig,
  logger: Logger,
  worker?: WorkerLink,
): Promise<RunningDaemon> {
  const spoolDir = join(config.dataDir, 'spool');
  // Alone, this process replays what workers of an earlier run left spooled (worker-spools.ts).
  if (!worker) gatherWorkerSpools(spoolDir);
  const instanceId = proxyInstanceId(config.dataDir);
  const maxHeld = config.breakpointMaxHeld ?? DEFAULT_MAX_HELD;
  const pool = new pg.Pool({
    connectionString: config.dbUrl,
    // One connection stays LISTENing (resumes, settings, ports); breakpoint rows use the rest.
    max: 6,
    connectionTimeoutMillis: 2_000,
    application_name: 'capture-proxy-devices',
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'device database connection lost'));
  const writer = new CaptureWriter({
    dbUrl: config.dbUrl,
    spoolDir: worker ? workerSpoolDir(spoolDir, worker.index) : spoolDir,
    logger,
  });
  try {
    const proxy = await startProxy({
      port: config.port,
      managementPort: config.managementPort,
      host: config.host,
      lanAddress: config.lanAddress,
      writer,
      allowlist: config.allowlist,
      bodyCap: config.bodyCap,
      ca: loadOrCreateCertificateAuthority(config.dataDir),
      passthroughHosts: config.passthroughHosts,
      http2: config.http2,
      upstreamCa: config.upstreamCa,
      destinations: config.destinations,
      devices: {
        pool,
        proxyDomain: config.proxyDomain,
        portRange: config.portRange,
        portsPerAccount: config.portsPerAccount,
        allocateFailuresPerMinute: config.allocateFailuresPerMinute,
        breakpoints: {
          instanceId: worker ? `${instanceId}#${worker.index}` : instanceId,
          holdTimeoutMs: config.breakpointTimeoutMs,
          maxHeld: worker ? Math.ceil(maxHeld / worker.count) : maxHeld,
        },
      },
      worker,
      logger,
    });
    logger.info(
      { port: proxy.port, managementPort: proxy.managementPort, domain: config.proxyDomain },
      'capture proxy listening',
    );
    return {
      proxy,
      writer,
      async stop() {
        await proxy.stop();
        await writer.stop();
        worker?.close();
        await pool.end().catch(() => undefined);
      },
    };
  } catch (error) {
    await writer.stop();
    worker?.close();
    await pool.end().catch(() => undefined);
    throw error;
  }
}
