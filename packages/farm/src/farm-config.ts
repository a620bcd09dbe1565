// The farm's settings (docs/farm.md), validated once (house style "Config"): the tool server's
// `farm` option is this object, so its defaults and limits are stated here, beside the code that
// enforces them. Every option is listed with its default in docs/farm.md.
import { hostname } from 'node:os';
import { z } from 'zod';

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
