// startStack(): the whole local backend on one machine without Docker, in dependency order:
// Postgres → platform bootstrap → migrations (+ seed on a new database) → PostgREST, auth,
// storage and functions → gateway → status service and capture proxy. Whatever started is
// stopped again if a later step fails.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDashboardServer } from '@capture/dashboard';
import { DestinationPolicy, type RunningDaemon, startProxyDaemon } from '@capture/proxy';
import { localStackComponents, startStatusService } from '@capture/status';
import {
  type RunningToolServer,
  startToolServer,
  type ToolServerConfigInput,
} from '@capture/tool-server';
import pino, { type Logger } from 'pino';
import { type AuthConfig, type AuthRateLimits, authConfigFrom } from './auth/auth-config.ts';
import { startAuthService } from './auth/service.ts';
import { isAddressInUse, StackError } from './errors.ts';
import { discoverFunctions, readFunctionsEnv } from './functions/discover.ts';
import { FunctionHost } from './functions/function-host.ts';
import { startGateway } from './gateway/gateway.ts';
import { createProjectKeys, type ProjectKeys } from './keys.ts';
import { type LanAddress, resolveLanAddress } from './lan-address.ts';
import { preparePhoneSetup } from './lan-phone.ts';
import { notable } from './logging/stack-logger.ts';
import { assertPortFree, findFreePort, findFreePortRange } from './ports.ts';
import { startCluster } from './postgres/cluster.ts';
import { applyMigrations, applyPlatformBootstrap, applySeed } from './postgres/schema-setup.ts';
import { startPostgrest } from './postgrest.ts';
import { loadProjectConfig } from './project-config.ts';
import { startRealtime } from './realtime/realtime-service.ts';
import { type StatusVariables, statusVariables } from './status-variables.ts';
import { startStorageService } from './storage/service.ts';
import { SIGNED_UPLOAD_EXPIRY_SECONDS } from './storage/storage-config.ts';

/** `*.localhost` resolves to loopback in browsers (RFC 6761 §6.3), so PAC URLs work locally. */
const PROXY_DOMAIN = 'proxy.localhost';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface StackPorts {
  api: number;
  db: number;
  rest: number;
  restAdmin: number;
  auth: number;
  /** The storage service behind /storage/v1. */
  storage: number;
  /** The dashboard (54323), the tool server's `{mcp_url}` (54324) and `{mcp_url_legacy}` (54325). */
  dashboard: number;
  mcp: number;
  mcpLegacy: number;
  /** The capture proxy's shared port (8888), its management port (8889) and device ports. */
  proxy: number;
  proxyManagement: number;
  devicePorts: { start: number; end: number };
}

export interface StackOptions {
  /** Folder holding `supabase/` (config.toml, migrations, seed.sql, functions). */
  projectDir?: string;
  /** Where the cluster, mailbox and state live; default `<projectDir>/.stack`. */
  dataDir?: string;
  /** 'config' uses supabase/config.toml (54321, 54322, …); 'free' picks free ports (tests). */
  ports?: 'config' | 'free';
  /** fsync off: for throwaway test stacks. */
  ephemeral?: boolean;
  /** Apply supabase/seed.sql when the database is new (default true). */
  seed?: boolean;
  /** How often the status service writes service_status (default 10 s, 002 §8). */
  statusIntervalMs?: number;
  /** Extra function secrets over supabase/functions/.env (tests set switches such as test clocks). */
  functionSecrets?: Record<string, string>;
  /**
   * Start the capture proxy. Default: on for this repository's project, off for others (the
   * proxy needs this project's schema: entries, devices, device ports).
   */
  proxy?: boolean;
  /**
   * Where the stack's proxy may connect (PROXY_DESTINATIONS). Default `public` only: no loopback,
   * so the stack's own API and database are not reachable through it (SSRF; docs/proxy.md
   * "Listeners", Destinations). Tests that load local pages through the proxy opt in, e.g.
   * `['public', '127.0.0.0/8', 'localhost']`.
   */
  proxyDestinations?: string[];
  /**
   * LAN mode (docs/devices.md): the proxy's shared, management and device ports also bind this
   * machine's LAN address (`address`, or the default route's), its allowlist admits that subnet,
   * and a phone's set-up link is made for the banner. Default: `[capture_proxy]` in config.toml,
   * else loopback only. The API, database, tool server and dashboard stay on loopback either way.
   */
  lan?: { address?: string };
  /** Extra PEM roots the proxy trusts for origins (tests: an HTTPS origin with a test CA). */
  proxyUpstreamCa?: string[];
  /**
   * Start the tool server and the dashboard (they need this project's schema). Default: on for
   * this repository's project, off for others.
   */
  toolServer?: boolean;
  /** The tool server's build number (serverInfo.version); default: the stack's start time. */
  buildNumber?: string;
  /** Tool-server settings over the stack's (tests: lifetimes, rate limits, metadata documents). */
  toolServerSettings?: Partial<ToolServerConfigInput>;
  /**
   * The auth service's per-address request limits: 'config' honours `[auth.rate_limit]`; 'off'
   * lifts them (test stacks signing in hundreds of times from one address); or values over the
   * config's. Default: 'config', or 'off' when STACK_AUTH_RATE_LIMITS=off is set. Per-account
   * guards stay on either way.
   */
  authRateLimits?: 'config' | 'off' | Partial<AuthRateLimits>;
  logger?: Logger;
}

export interface RunningStack {
  projectDir: string;
  dataDir: string;
  mailboxDir: string;
  ports: StackPorts;
  /** Base domain of the PAC URLs: http://<port>.proxy.localhost:<proxyManagement>/. */
  proxyDomain: string;
  /** `{mcp_url}` and `{mcp_url_legacy}` (the same tool server on a second origin). */
  mcpUrl: string;
  mcpLegacyUrl: string;
  /** `{dashboard_url}`. */
  dashboardUrl: string;
  /** LAN mode's address, interface and subnet; undefined on loopback only. */
  lan: LanAddress | undefined;
  /** Where the proxy serves set-up pages: `http://<LAN or loopback>:<proxyManagement>`. */
  proxySetupUrl: string;
  /** LAN mode: the set-up page of the phone device the stack prepared (a QR code at start). */
  phoneSetupUrl: string | undefined;
  keys: ProjectKeys;
  apiUrl: string;
  dbUrl: string;
  status(): StatusVariables;
  stop(): Promise<void>;
}

/** Local proxy ports (docs/local-stack.md): 8888 shared, 8889 management, devices 20000-20999. */
const PROXY_PORTS = {
  proxy: 8888,
  proxyManagement: 8889,
  devicePorts: { start: 20000, end: 20999 },
};

/** Local tool-server and dashboard ports (architecture "Ports"). */
const CONSOLE_PORTS = { dashboard: 54323, mcp: 54324, mcpLegacy: 54325 };

async function choosePorts(
  mode: 'config' | 'free',
  apiPort: number,
  dbPort: number,
  withProxy: boolean,
  withToolServer: boolean,
): Promise<StackPorts> {
  if (mode === 'free') {
    const [
      api,
      db,
      rest,
      restAdmin,
      auth,
      storage,
      proxy,
      proxyManagement,
      dashboard,
      mcp,
      mcpLegacy,
    ] = await Promise.all(Array.from({ length: 11 }, () => findFreePort()));
    const devicePorts = withProxy ? await findFreePortRange(20) : PROXY_PORTS.devicePorts;
    return {
      api,
      db,
      rest,
      restAdmin,
      auth,
      storage,
      proxy,
      proxyManagement,
      devicePorts,
      dashboard,
      mcp,
      mcpLegacy,
    } as StackPorts;
  }
  await assertPortFree(apiPort, 'API gateway');
  await assertPortFree(dbPort, 'Postgres');
  if (withProxy) {
    await assertPortFree(PROXY_PORTS.proxy, 'capture proxy');
    await assertPortFree(PROXY_PORTS.proxyManagement, 'capture proxy management');
  }
  if (withToolServer) {
    await assertPortFree(CONSOLE_PORTS.dashboard, 'dashboard');
    await assertPortFree(CONSOLE_PORTS.mcp, 'tool server');
    await assertPortFree(CONSOLE_PORTS.mcpLegacy, 'tool server (legacy origin)');
  }
  const [rest, restAdmin, auth, storage] = await Promise.all(
    Array.from({ length: 4 }, () => findFreePort()),
  );
  return {
    api: apiPort,
    db: dbPort,
    rest,
    restAdmin,
    auth,
    storage,
    ...PROXY_PORTS,
    ...CONSOLE_PORTS,
  };
}

/**
 * Magic links and other auth redirects must be able to land on the dashboard the stack serves,
 * whatever port it got: it becomes the site URL and joins the allow list.
 */
function withDashboardRedirects(config: AuthConfig, dashboardUrl: string | undefined): AuthConfig {
  if (!dashboardUrl) return config;
  return {
    ...config,
    siteUrl: dashboardUrl,
    redirectAllowList: [...config.redirectAllowList, `${dashboardUrl}/**`],
  };
}

/**
 * Starts the stack. With free ports, a port taken between being chosen and being listened on
 * (another test file's stack, an outgoing connection) is not a failure: the start is retried on
 * new ports, from an empty data directory again when it began empty.
 */
export async function startStack(options: StackOptions = {}): Promise<RunningStack> {
  if (options.ports !== 'free') return startStackOnce(options);
  const projectDir = resolve(options.projectDir ?? REPO_ROOT);
  const dataDir = resolve(options.dataDir ?? join(projectDir, '.stack'));
  const beganEmpty = readdirSafe(dataDir).length === 0;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startStackOnce(options);
    } catch (error) {
      if (attempt >= 3 || !isAddressInUse(error)) throw error;
      options.logger?.warn({ err: error, attempt }, 'a chosen port was taken; starting again');
      if (beganEmpty) {
        for (const entry of readdirSafe(dataDir))
          rmSync(join(dataDir, entry), { recursive: true, force: true });
      }
    }
  }
}

/** The proxy's destinations, each checked now so a bad one is named as a setting. */
function checkedDestinations(entries: string[] | undefined): string[] | undefined {
  if (entries === undefined) return undefined;
  try {
    new DestinationPolicy(entries);
  } catch (error) {
    throw new StackError('bad_option', `proxy destinations: ${(error as Error).message}`);
  }
  return entries;
}

function readdirSafe(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}

/**
 * The option, else `STACK_AUTH_RATE_LIMITS=off` from the environment (the test runner sets it:
 * its stacks sign in hundreds of times from 127.0.0.1; tests of the limits pass the option).
 */
function authRateLimitsOf(options: StackOptions): NonNullable<StackOptions['authRateLimits']> {
  return (
    options.authRateLimits ?? (process.env.STACK_AUTH_RATE_LIMITS === 'off' ? 'off' : 'config')
  );
}

async function startStackOnce(options: StackOptions): Promise<RunningStack> {
  const projectDir = resolve(options.projectDir ?? REPO_ROOT);
  const dataDir = resolve(options.dataDir ?? join(projectDir, '.stack'));
  const mailboxDir = join(dataDir, 'mailbox');
  const logger = options.logger ?? pino({ level: 'info' });
  const project = loadProjectConfig(projectDir);
  const keys = await createProjectKeys();
  const withProxy = options.proxy ?? projectDir === REPO_ROOT;
  const withToolServer = options.toolServer ?? projectDir === REPO_ROOT;
  const lanOption =
    options.lan ??
    (project.capture_proxy.lan ? { address: project.capture_proxy.lan_address } : undefined);
  if (lanOption && !withProxy) {
    throw new StackError('bad_option', 'LAN mode serves the capture proxy, which is off here');
  }
  const lan = lanOption && resolveLanAddress(lanOption.address);
  const proxyDestinations = checkedDestinations(
    options.proxyDestinations ?? project.capture_proxy.destinations,
  );
  const ports = await choosePorts(
    options.ports ?? 'config',
    project.api.port,
    project.db.port,
    withProxy,
    withToolServer,
  );
  const apiUrl = `http://127.0.0.1:${ports.api}`;
  const mcpUrl = `http://127.0.0.1:${ports.mcp}`;
  // A second origin for the same process (001 §9 `{mcp_url_legacy}`): another name and port.
  const mcpLegacyUrl = `http://localhost:${ports.mcpLegacy}`;
  const dashboardUrl = `http://127.0.0.1:${ports.dashboard}`;
  // What phones are told: the LAN address in LAN mode; PAC files by IP there (no wildcard DNS on
  // a home network), by `<port>.proxy.localhost` otherwise (002 §4.4).
  const proxyAddress = lan?.address ?? '127.0.0.1';
  const proxySetupUrl = `http://${proxyAddress}:${ports.proxyManagement}`;
  const pacUrlTemplate = lan
    ? `${proxySetupUrl}/{port}.pac`
    : `http://{port}.${PROXY_DOMAIN}:${ports.proxyManagement}/proxy.pac`;
  mkdirSync(dataDir, { recursive: true });

  const stoppers: Array<() => Promise<void>> = [];
  // Each service the stack starts: one notable line when it is up and one when it has stopped.
  const owned = (name: string, where: string, stopOne: () => Promise<void>) => {
    logger.info(notable(name), `started ${where}`);
    stoppers.push(async () => {
      await stopOne();
      logger.info(notable(name), 'stopped');
    });
  };
  const stop = async () => {
    for (const stopOne of stoppers.reverse()) await stopOne().catch(() => undefined);
    stoppers.length = 0;
  };
  try {
    const cluster = await startCluster({
      dataDir,
      port: ports.db,
      logger,
      ephemeral: options.ephemeral,
    });
    owned('postgres', `on 127.0.0.1:${ports.db}`, cluster.stop);
    await applyPlatformBootstrap(cluster.url);
    await applyMigrations(projectDir, cluster.url, logger);
    if (cluster.created && options.seed !== false) await applySeed(projectDir, cluster.url, logger);

    const functionsDir = join(projectDir, 'supabase', 'functions');
    const functions = new FunctionHost({
      functions: discoverFunctions(functionsDir, project.functions),
      secrets: {
        // The assistant links devices and captures to this stack's dashboard (its own default is
        // the fixed local port, wrong for a stack on free ports); .env and tests may override.
        ASSISTANT_DASHBOARD_URL: dashboardUrl,
        ...readFunctionsEnv(functionsDir),
        ...options.functionSecrets,
      },
      projectDir,
      logger,
      environment: {
        SUPABASE_URL: apiUrl,
        SUPABASE_ANON_KEY: keys.anonKey,
        SUPABASE_SERVICE_ROLE_KEY: keys.serviceRoleKey,
        SUPABASE_DB_URL: cluster.url,
        SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: keys.publishableKey }),
        SUPABASE_SECRET_KEYS: JSON.stringify({ default: keys.secretKey }),
      },
    });
    owned('functions', 'behind /functions/v1', () => functions.stopAll());
    // Settled, not all: when one start fails, the ones that did start are owned and stopped too.
    const [postgrestStart, authStart, functionsStart] = await Promise.allSettled([
      startPostgrest({
        dbPort: ports.db,
        port: ports.rest,
        adminPort: ports.restAdmin,
        jwtSecret: keys.jwtSecret,
        schemas: project.api.schemas,
        extraSearchPath: project.api.extra_search_path,
        maxRows: project.api.max_rows,
        logger,
      }),
      startAuthService({
        port: ports.auth,
        dbPort: ports.db,
        config: withDashboardRedirects(
          authConfigFrom(project, apiUrl, keys.jwtSecret, authRateLimitsOf(options)),
          withToolServer ? dashboardUrl : undefined,
        ),
        mailboxDir,
        logger,
      }),
      functions.startAll(),
    ]);
    if (postgrestStart.status === 'fulfilled') {
      owned('postgrest', `on 127.0.0.1:${ports.rest}`, postgrestStart.value.stop);
    }
    if (authStart.status === 'fulfilled') {
      owned('auth', `on 127.0.0.1:${ports.auth}`, authStart.value.stop);
    }
    for (const start of [postgrestStart, authStart, functionsStart]) {
      if (start.status === 'rejected') throw start.reason;
    }
    if (project.storage.enabled) {
      const storage = await startStorageService({
        port: ports.storage,
        dbPort: ports.db,
        config: {
          rootDir: join(dataDir, 'storage'),
          jwtSecret: keys.jwtSecret,
          fileSizeLimit: project.storage.file_size_limit,
          signedUploadExpirySeconds: SIGNED_UPLOAD_EXPIRY_SECONDS,
        },
        logger,
      });
      owned('storage', `on 127.0.0.1:${ports.storage}`, storage.stop);
    }
    const realtime = await startRealtime({ dbUrl: cluster.url, jwtSecret: keys.jwtSecret, logger });
    owned('realtime', 'on the gateway', realtime.stop);
    const gateway = await startGateway({
      port: ports.api,
      keys,
      restPort: ports.rest,
      authPort: ports.auth,
      storagePort: project.storage.enabled ? ports.storage : undefined,
      functions,
      realtime,
      logger,
    });
    owned('gateway', `at ${apiUrl}`, gateway.stop);
    let proxy: RunningDaemon | undefined;
    if (withProxy) {
      proxy = await startProxyDaemon(
        {
          dbUrl: cluster.url,
          dataDir: join(dataDir, 'proxy'),
          host: '127.0.0.1',
          lanAddress: lan?.address,
          port: ports.proxy,
          managementPort: ports.proxyManagement,
          proxyDomain: PROXY_DOMAIN,
          portRange: ports.devicePorts,
          allowlist: ['127.0.0.0/8', '::1/128', ...(lan ? [lan.cidr] : [])],
          passthroughHosts: [],
          bodyCap: 1024 * 1024,
          http2: true,
          destinations: proxyDestinations,
          upstreamCa: options.proxyUpstreamCa,
        },
        logger,
      );
      owned(
        'proxy',
        `on 127.0.0.1${lan ? ` and ${lan.address}` : ''}:${ports.proxy} (management ` +
          `${ports.proxyManagement})`,
        proxy.stop,
      );
      if (lan) {
        logger.info(
          notable('proxy'),
          `LAN mode on ${lan.address} (${lan.interfaceName}, chosen by ${lan.chosenBy}); ` +
            `clients from ${lan.cidr} may use it`,
        );
      }
    }
    let toolServer: RunningToolServer | undefined;
    if (withToolServer) {
      toolServer = await startToolServer(
        {
          origins: [mcpUrl, mcpLegacyUrl],
          listen: [
            { host: '127.0.0.1', port: ports.mcp },
            // `localhost` may resolve to either loopback family (browsers try ::1 too).
            { host: '127.0.0.1', port: ports.mcpLegacy },
            { host: '::1', port: ports.mcpLegacy },
          ],
          dashboardUrl,
          dbUrl: cluster.url,
          supabaseUrl: apiUrl,
          supabaseAnonKey: keys.anonKey,
          jwtSecret: keys.jwtSecret,
          buildNumber: options.buildNumber ?? String(Math.floor(Date.now() / 1000)),
          pacUrlTemplate: withProxy ? pacUrlTemplate : undefined,
          // The dashboard's "Android over USB" (docs/devices.md): a phone on this machine's adb
          // server (ANDROID_ADB_SERVER_PORT, as adb itself reads it) pointed at its device port, by
          // the LAN address or, without LAN mode, through adb reverse.
          ...(withProxy && {
            androidSetup: {
              adbServerPort: Number(process.env.ANDROID_ADB_SERVER_PORT || 5037),
              proxyHost: lan?.address ?? null,
              setupBaseUrl: proxySetupUrl,
              managementUrl: `http://127.0.0.1:${ports.proxyManagement}`,
            },
          }),
          // As the tool server's own CLI reads it (docs/tool-server.md "Settings").
          ...(process.env.TOOL_SERVER_REGISTRATIONS_PER_HOUR && {
            registrationsPerHour: Number(process.env.TOOL_SERVER_REGISTRATIONS_PER_HOUR),
          }),
          ...options.toolServerSettings,
          // The farm runs on this machine and sends its traffic through this stack's proxy; a
          // test's farm settings (its own adb server, the farm host's name) go over these.
          farm: {
            ...(withProxy
              ? { enabled: true, proxyManagementUrl: `http://127.0.0.1:${ports.proxyManagement}` }
              : { enabled: false }),
            ...options.toolServerSettings?.farm,
          },
        },
        logger,
      );
      owned('tool-server', `at ${mcpUrl} and ${mcpLegacyUrl}`, toolServer.stop);
      const dashboard = await startDashboardServer({
        port: ports.dashboard,
        host: '127.0.0.1',
        config: {
          supabaseUrl: apiUrl,
          supabasePublishableKey: keys.publishableKey,
          mcpUrl,
          // The Devices page shows PAC URLs, the CA download and the manual settings.
          ...(withProxy && {
            proxy: {
              managementUrl: `http://127.0.0.1:${ports.proxyManagement}`,
              pacUrlTemplate,
              manualProxy: `${proxyAddress}:${ports.proxy}`,
              setupUrl: proxySetupUrl,
            },
          }),
        },
        logger,
      });
      owned('dashboard', `at ${dashboardUrl}`, dashboard.stop);
    }
    const status = await startStatusService({
      dbUrl: cluster.url,
      components: localStackComponents({
        dbUrl: cluster.url,
        apiUrl,
        anonKey: keys.anonKey,
        proxyHealthUrl: proxy && `http://127.0.0.1:${ports.proxyManagement}/health`,
        toolServerUrl: toolServer && `${mcpUrl}/.well-known/oauth-protected-resource`,
      }),
      intervalMs: options.statusIntervalMs,
      logger,
    });
    owned('status', 'probing every component', status.stop);
    const phoneSetupUrl = lan ? await preparePhoneSetup(cluster.url, proxySetupUrl) : undefined;

    const stack: RunningStack = {
      projectDir,
      dataDir,
      mailboxDir,
      ports,
      proxyDomain: PROXY_DOMAIN,
      mcpUrl,
      mcpLegacyUrl,
      dashboardUrl,
      lan,
      proxySetupUrl,
      phoneSetupUrl,
      keys,
      apiUrl,
      dbUrl: cluster.url,
      status: () => statusVariables(stack),
      stop,
    };
    return stack;
  } catch (error) {
    await stop();
    throw error;
  }
}
