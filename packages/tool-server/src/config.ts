// The tool server's settings, read once from the environment and validated (house style
// "Config"); startToolServer() takes the same typed object, so the local stack and tests build it
// directly. Every option is listed with its default in docs/tool-server.md.
import { hostname } from 'node:os';
import { z } from 'zod';

const origin = z
  .string()
  .url()
  .transform((value) => new URL(value).origin);

/** Debian's adb, and the port adb's own server listens on unless ANDROID_ADB_SERVER_PORT says. */
export const DEFAULT_ADB_PATH = '/usr/bin/adb';
export const DEFAULT_ADB_SERVER_PORT = 5037;

/** Limits of one farm_run_shell call (docs/farm.md lists them with the reasons). */
const ShellLimitsSchema = z.object({
  wallTimeMs: z.number().int().min(100).max(600_000).default(30_000),
  cpuSeconds: z.number().int().min(1).max(600).default(20),
  /** Address space per process (RLIMIT_AS). */
  memoryBytes: z
    .number()
    .int()
    .min(16 * 1024 * 1024)
    .default(1024 * 1024 * 1024),
  /** Processes and threads of the sandbox's user (RLIMIT_NPROC inside its own user namespace). */
  processes: z.number().int().min(4).max(4096).default(64),
  /** stdout and stderr each; more is cut and the call flagged truncated. */
  outputBytes: z
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  /** Size of the private writable scratch (tmpfs) and of any one file written (RLIMIT_FSIZE). */
  scratchBytes: z
    .number()
    .int()
    .min(1024 * 1024)
    .default(64 * 1024 * 1024),
  /**
   * All the memory of one sandbox together (its own memory cgroup: memfd files, shared memory and
   * tmpfs pages included, which RLIMIT_AS does not count); past it the sandbox is killed.
   */
  sandboxMemoryBytes: z
    .number()
    .int()
    .min(32 * 1024 * 1024)
    .default(512 * 1024 * 1024),
  /** Shells running at once on this host; more are refused as busy. */
  maxConcurrent: z.number().int().min(1).max(64).default(4),
  /**
   * When the tool server runs as root, each concurrent sandbox runs as its own unprivileged uid
   * from here (uid..uid+maxConcurrent-1), so one sandbox's process limit is not another's.
   */
  sandboxUidBase: z.number().int().min(1000).max(4_000_000_000).default(61_000),
});

/** browser_cdp's sessions (docs/farm.md "Browser"). */
const BrowserLimitsSchema = z.object({
  /** A session nobody used for this long is closed. */
  idleSeconds: z.number().int().min(5).max(3_600).default(300),
  maxSessions: z.number().int().min(1).max(64).default(4),
  maxSessionsPerUser: z.number().int().min(1).max(16).default(2),
  /** Longest wait of one action (a navigation, a click's page load); an argument may lower it. */
  actionTimeoutMs: z.number().int().min(1_000).max(120_000).default(30_000),
  /** The browser's private writable home (tmpfs): its profile, cache and downloads. */
  homeBytes: z
    .number()
    .int()
    .min(32 * 1024 * 1024)
    .default(256 * 1024 * 1024),
  /** All the memory of one session's browser together (its memory cgroup, /dev/shm included). */
  sandboxMemoryBytes: z
    .number()
    .int()
    .min(256 * 1024 * 1024)
    .default(2 * 1024 * 1024 * 1024),
  /** As for shells: each session runs as its own unprivileged uid from here when we are root. */
  sandboxUidBase: z.number().int().min(1000).max(4_000_000_000).default(62_000),
});

export const FarmConfigSchema = z.object({
  enabled: z.boolean(),
  /** The capture proxy's management URL (`POST /allocate`, 002 §2.3) the farm's devices use. */
  proxyManagementUrl: z.string().url().optional(),
  /** The host farm traffic reaches device ports on (the proxy's listening address). */
  proxyHost: z.string().min(1).default('127.0.0.1'),
  bwrapPath: z.string().min(1).default('/usr/bin/bwrap'),
  chromiumPath: z.string().min(1).default('/usr/bin/chromium'),
  adbPath: z.string().min(1).default(DEFAULT_ADB_PATH),
  /** The adb server this farm host's tool server talks to (ANDROID_ADB_SERVER_PORT). */
  adbServerPort: z.number().int().min(1).max(65_535).default(DEFAULT_ADB_SERVER_PORT),
  aaptPath: z.string().min(1).default('/usr/bin/aapt'),
  /** This host's name in public.farm_attached_devices.farm_host: its devices are the ones there. */
  hostName: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/)
    .default(() => hostname().slice(0, 63)),
  /**
   * A cgroup v2 directory delegated to the tool server (memory in its cgroup.subtree_control),
   * under which each shell and browser sandbox gets its memory cgroup. Unset: the tool server's
   * own cgroup of cgroup v1's memory controller, when it can write there (root); otherwise none
   * (docs/farm.md "Weak points").
   */
  cgroupParent: z.string().optional(),
  /** The Android app tools (docs/farm.md "Android devices"). */
  android: z
    .object({
      /** An APK fetched from a URL (through the capture proxy) larger than this is refused. */
      packageMaxBytes: z
        .number()
        .int()
        .min(1024)
        .default(100 * 1024 * 1024),
      downloadTimeoutMs: z.number().int().min(1_000).max(3_600_000).default(300_000),
      /** Streaming an APK to the device and the device's verification of it. */
      installTimeoutMs: z.number().int().min(1_000).max(3_600_000).default(300_000),
      /** Listing, uninstalling and reading an APK's identity. */
      commandTimeoutMs: z.number().int().min(1_000).max(600_000).default(30_000),
    })
    .default({
      packageMaxBytes: 100 * 1024 * 1024,
      downloadTimeoutMs: 300_000,
      installTimeoutMs: 300_000,
      commandTimeoutMs: 30_000,
    }),
  /** How long a confirmation of a destructive call stays valid (docs/farm.md, "Gating"). */
  confirmationTtlSeconds: z.number().int().min(30).max(3_600).default(300),
  shell: ShellLimitsSchema.default(ShellLimitsSchema.parse({})),
  browser: BrowserLimitsSchema.default(BrowserLimitsSchema.parse({})),
});

export type FarmConfig = z.output<typeof FarmConfigSchema>;

/**
 * The dashboard's "Android over USB" routes (docs/devices.md "Android over USB"): a phone on this
 * machine's adb pointed at its device port. Unset: the routes answer 404.
 */
export const AndroidSetupConfigSchema = z.object({
  adbPath: z.string().min(1).default(DEFAULT_ADB_PATH),
  /** The running adb server's port; the tool server never starts one. */
  adbServerPort: z.number().int().min(1).max(65_535).default(DEFAULT_ADB_SERVER_PORT),
  /** The proxy's LAN address (PROXY_LAN_ADDRESS); null: phones reach it through adb reverse. */
  proxyHost: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/)
    .nullable(),
  /** Base URL of the proxy's set-up pages (PROXY_SETUP_URL). */
  setupBaseUrl: z.string().url(),
  /** The proxy's management URL (PROXY_MANAGEMENT_URL), serving `/ca.der`. */
  managementUrl: z.string().url(),
  /** How long a connect waits for the phone's traffic before answering. */
  trafficTimeoutMs: z.number().int().min(500).max(120_000).default(30_000),
});

export type AndroidSetupConfig = z.output<typeof AndroidSetupConfigSchema>;

/**
 * Fair use of tools/call (docs/tool-server.md "Fair use"): limits checked before any pool slot is
 * taken (over them: 429 with Retry-After), and the tool pool handed out round-robin per user with
 * a smaller share for the search path.
 */
const ToolCallsConfigSchema = z
  .object({
    /** Off: no limits, and the pool's own first-come queue (what the benchmark compares with). */
    fairUse: z.boolean().default(true),
    /** Calls in flight per access token: an agent's parallel tool calls. */
    perTokenConcurrency: z.number().int().min(1).max(1_000).default(8),
    /** Calls in flight per account, all its tokens together. */
    perUserConcurrency: z.number().int().min(1).max(10_000).default(16),
    /** Calls per second an account's token bucket refills with. */
    perUserRate: z.number().positive().max(10_000).default(10),
    /** The bucket's size: calls an account may make at once after a quiet spell. */
    perUserBurst: z.number().int().min(1).max(100_000).default(50),
    /** Connections of the pool tool queries run on (as the caller). */
    poolSize: z.number().int().min(2).max(200).default(10),
    /** Of those, at most this many run the search path at once (inspect_requests with search). */
    searchSlots: z.number().int().min(1).max(199).default(3),
    /** A query that waits longer than this for a connection is answered "unavailable". */
    slotWaitMs: z.number().int().min(100).max(60_000).default(5_000),
  })
  .refine((limits) => limits.searchSlots < limits.poolSize, {
    message: 'searchSlots must be smaller than poolSize',
    path: ['searchSlots'],
  })
  .refine((limits) => limits.perTokenConcurrency <= limits.perUserConcurrency, {
    message: 'perTokenConcurrency must not exceed perUserConcurrency',
    path: ['perTokenConcurrency'],
  });

export const ToolServerConfigSchema = z.object({
  /** `{mcp_url}` first, then `{mcp_url_legacy}` and any other origin serving the same function. */
  origins: z.array(origin).min(1),
  /** Sockets to listen on; every origin above must reach one of them (directly or via a proxy). */
  listen: z
    .array(z.object({ host: z.string().min(1), port: z.number().int().min(0).max(65_535) }))
    .min(1),
  /** `{dashboard_url}`: where /authorize sends the browser for consent. */
  dashboardUrl: origin,
  /** Postgres URL; the OAuth state lives in schema private (owner rights needed). */
  dbUrl: z.string().min(1),
  /** `{base_url}`: the Supabase API the dashboard's sessions come from (`<url>/auth/v1` = iss). */
  supabaseUrl: z.string().url(),
  /** The project's JWT secret: access tokens are HS256 so PostgREST, Realtime and functions verify them. */
  jwtSecret: z.string().min(32),
  accessTokenTtlSeconds: z.number().int().min(60).max(86_400).default(3_600),
  refreshTokenTtlSeconds: z
    .number()
    .int()
    .min(3_600)
    .default(30 * 86_400),
  /**
   * A rotated refresh token presented again within this many seconds of its rotation gets another
   * successor instead of revoking its family: one client refreshing from two requests at once
   * (the MCP SDKs do on parallel 401s) is not theft. GoTrue's refresh_token_reuse_interval; 0 is
   * strict OAuth 2.1 rotation.
   */
  refreshReuseIntervalSeconds: z.number().int().min(0).max(60).default(10),
  authorizationRequestTtlSeconds: z.number().int().min(60).max(3_600).default(600),
  /**
   * OAuth 2.1 §4.1.2: codes are short-lived. 60 s covers a client's redirect and exchange and
   * leaves little time to a leaked code (docs/tool-server.md "Codes").
   */
  codeTtlSeconds: z.number().int().min(10).max(600).default(60),
  /** Registrations per client address per hour (RFC 7591 leaves abuse control to us). */
  registrationsPerHour: z.number().int().min(1).default(30),
  /** How many proxies in front of us append to X-Forwarded-For (0: use the socket address). */
  trustedProxyHops: z.number().int().min(0).max(5).default(0),
  /** Where OAuth endpoints give up on the store and answer 503 (001 §7: within a few seconds). */
  storeDeadlineMs: z.number().int().min(500).max(30_000).default(4_000),
  /**
   * Client ID Metadata Documents may be fetched from loopback and private addresses. Off in
   * production (SSRF); tests turn it on to serve documents from a local HTTPS server.
   */
  metadataDocumentsAllowPrivateAddresses: z.boolean().default(false),
  /** Extra CA certificates (PEM) trusted when fetching metadata documents (tests). */
  metadataDocumentsExtraCa: z.string().optional(),
  /** A device's PAC URL with `{port}` for its port (002 §4.4); unset where there is no proxy. */
  pacUrlTemplate: z.string().optional(),
  /** Limits and the fair queue of tools/call (docs/tool-server.md "Fair use"). */
  toolCalls: ToolCallsConfigSchema.default(ToolCallsConfigSchema.parse({})),
  /** The farm tools (docs/farm.md): off unless a farm host is configured. */
  farm: FarmConfigSchema.default(FarmConfigSchema.parse({ enabled: false })),
  androidSetup: AndroidSetupConfigSchema.optional(),
  /** serverInfo.version: the build number, advancing on every deploy (001 §9). */
  buildNumber: z.string().min(1).default('0'),
});

export type ToolServerConfigInput = z.input<typeof ToolServerConfigSchema>;
export type ToolServerConfig = z.output<typeof ToolServerConfigSchema>;

export function parseToolServerConfig(input: ToolServerConfigInput): ToolServerConfig {
  return ToolServerConfigSchema.parse(input);
}

/** The auth service's issuer (`iss` of dashboard session tokens). */
export function authIssuerOf(config: ToolServerConfig): string {
  return `${config.supabaseUrl.replace(/\/+$/, '')}/auth/v1`;
}
