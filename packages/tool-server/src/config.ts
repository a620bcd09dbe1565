// The tool server's settings, read once from the environment and validated (house style
// "Config"); startToolServer() takes the same typed object, so the local stack and tests build it
// directly. Every option is listed with its default in docs/tool-server.md.
import { DEFAULT_ADB_PATH, DEFAULT_ADB_SERVER_PORT, FarmConfigSchema } from '@capture/farm';
import { z } from 'zod';

const origin = z
  .string()
  .url()
  .transform((value) => new URL(value).origin);

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
  /**
   * The project's anon (publishable) key, sent as `apikey` beside the caller's own token when a
   * tool reads Storage as them (android_install_app's apk_object). Unset: no Storage reads.
   */
  supabaseAnonKey: z.string().min(1).optional(),
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
  /**
   * A destructive farm call may be approved in the client, through MCP elicitation, when the
   * client declares it (docs/farm.md "Gating"). Off: only from a dashboard session, whatever the
   * client declares, since an agent that runs its own MCP client can answer for its user.
   */
  approvalsInClient: z.boolean().default(true),
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
