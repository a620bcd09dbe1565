// farm_run_shell's sandbox (docs/farm.md "Shell"): Debian's bubblewrap with every namespace
// unshared, the system (/usr) read-only, a generated /etc, a private size-capped tmpfs as the
// only writable place, no capabilities, and rlimits for CPU, address space, file size, open files
// and processes (per sandbox: each concurrent sandbox runs as its own unprivileged uid when we
// are root, in its own user namespace). The network namespace is empty: with network "proxy" the
// only way out is a forwarder on the sandbox's loopback that reaches the caller's farm device port
// on the capture proxy through a Unix socket, so everything fetched is captured. Wall time and
// output are enforced here: the sandbox is killed (its PID namespace dies with it) when either runs
// over.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { FarmConfig } from '../../config.ts';
import { forwarderStartLines, SANDBOX_PROXY_PORT, startEgressBridge } from '../egress-bridge.ts';
import type { FarmEgress } from '../farm.ts';

const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** sh exits 128 + the signal number; 24 is SIGXCPU (RLIMIT_CPU's soft limit). */
const EXIT_ON_SIGXCPU = 128 + 24;

export interface ShellRequest {
  command: string;
  /** `none`: no network at all; `proxy`: only through the capture proxy (egress required). */
  network: 'none' | 'proxy';
  egress?: FarmEgress;
  /** Within the configured wall-time limit. */
  wallTimeMs: number;
}

export type Termination = 'wall_time' | 'output_limit' | 'cpu_time';

export interface ShellResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Why the sandbox was stopped early, if it was. */
  terminated: Termination | null;
  durationMs: number;
}

export class ShellBusyError extends Error {
  constructor(limit: number) {
    super(`${limit} farm shells are already running on this host; retry shortly.`);
    this.name = 'ShellBusyError';
  }
}

export class SandboxStartError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'SandboxStartError';
  }
}

/** Collects one output stream up to a byte limit. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private readonly limit: number;
  private size = 0;
  truncated = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Answers false once the stream went over its limit. */
  push(chunk: Buffer): boolean {
    const room = this.limit - this.size;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.size = this.limit;
      this.truncated = true;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** The /etc the sandbox sees: just enough for programs to run, nothing of the host's. */
function writeEtc(dir: string, caPem: string | undefined): void {
  mkdirSync(join(dir, 'ssl', 'certs'), { recursive: true });
  mkdirSync(join(dir, 'alternatives'));
  writeFileSync(join(dir, 'passwd'), 'root:x:0:0::/:/bin/sh\nfarm:x:1000:1000::/scratch:/bin/sh\n');
  writeFileSync(join(dir, 'group'), 'root:x:0:\nfarm:x:1000:\n');
  writeFileSync(join(dir, 'hostname'), 'farm\n');
  writeFileSync(join(dir, 'hosts'), '127.0.0.1 localhost farm\n::1 localhost\n');
  writeFileSync(join(dir, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files\n');
  writeFileSync(join(dir, 'ld.so.cache'), '');
  let bundle = '';
  try {
    bundle = readFileSync(SYSTEM_CA_BUNDLE, 'utf8');
  } catch {
    // A host without the system bundle still trusts the project CA below.
  }
  writeFileSync(join(dir, 'ssl', 'certs', 'ca-certificates.crt'), `${bundle}\n${caPem ?? ''}`);
}

/** Waits for the forwarder's listening socket, then runs the command (in the sandbox's sh). */
function proxiedScript(): string {
  return [...forwarderStartLines(), 'exec /bin/sh -c "$FARM_COMMAND"'].join('\n');
}

export class ShellSandbox {
  private readonly config: FarmConfig;
  private readonly logger: Logger;
  private readonly running = new Map<number, ChildProcess>();
  /** The generated /etc per trusted CA, written once and bound read-only into every sandbox. */
  private readonly etcDirs = new Map<string, string>();
  private closed = false;

  constructor(config: FarmConfig, logger: Logger) {
    this.config = config;
    this.logger = logger;
  }

  async run(request: ShellRequest): Promise<ShellResult> {
    if (this.closed) throw new SandboxStartError('the farm is shutting down');
    const limits = this.config.shell;
    const slot = this.freeSlot();
    if (slot === undefined) throw new ShellBusyError(limits.maxConcurrent);
    const workDir = mkdtempSync(join(tmpdir(), 'farm-shell-'));
    let bridge: Server | undefined;
    try {
      // bwrap runs as the sandbox uid and must read what it binds; nothing here is secret.
      chmodSync(workDir, 0o755);
      const etcDir = this.etcFor(request.egress?.caCertificatePem ?? '');
      const runDir = join(workDir, 'run');
      mkdirSync(runDir, { mode: 0o755 });
      const proxied = request.network === 'proxy';
      if (proxied) {
        if (!request.egress) throw new SandboxStartError('network "proxy" needs a farm device');
        bridge = await startEgressBridge(join(runDir, 'proxy.sock'), request.egress);
      }
      return await this.spawnSandbox(slot, etcDir, runDir, proxied, request);
    } finally {
      this.running.delete(slot);
      if (bridge) await new Promise((resolve) => bridge?.close(resolve));
      rmSync(workDir, { recursive: true, force: true });
    }
  }

  /** Kills every running sandbox (server shutdown) and refuses new ones. */
  async close(): Promise<void> {
    this.closed = true;
    for (const child of this.running.values()) child?.kill('SIGKILL');
    for (const dir of this.etcDirs.values()) rmSync(dirname(dir), { recursive: true, force: true });
    this.etcDirs.clear();
  }

  /** Read-only in every sandbox (bound with --ro-bind), so one copy serves them all. */
  private etcFor(caPem: string): string {
    const known = this.etcDirs.get(caPem);
    if (known) return known;
    const home = mkdtempSync(join(tmpdir(), 'farm-etc-'));
    chmodSync(home, 0o755);
    const dir = join(home, 'etc');
    mkdirSync(dir);
    writeEtc(dir, caPem);
    this.etcDirs.set(caPem, dir);
    return dir;
  }

  private freeSlot(): number | undefined {
    for (let slot = 0; slot < this.config.shell.maxConcurrent; slot++) {
      if (!this.running.has(slot)) {
        // Reserved at once: a concurrent run() must not take the same uid.
        this.running.set(slot, undefined as unknown as ChildProcess);
        return slot;
      }
    }
    return undefined;
  }

  private bwrapArguments(etcDir: string, runDir: string, proxied: boolean, command: string) {
    const limits = this.config.shell;
    const proxyUrl = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    const proxyEnv = proxied
      ? ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY'].flatMap((name) => [
          '--setenv',
          name,
          proxyUrl,
        ])
      : [];
    const caBundle = '/etc/ssl/certs/ca-certificates.crt';
    return [
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--hostname',
      'farm',
      '--uid',
      '1000',
      '--gid',
      '1000',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/sbin',
      '/sbin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--ro-bind',
      etcDir,
      '/etc',
      '--ro-bind-try',
      '/etc/alternatives',
      '/etc/alternatives',
      '--ro-bind-try',
      '/etc/ld.so.cache',
      '/etc/ld.so.cache',
      '--ro-bind',
      runDir,
      '/run/farm',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--size',
      String(limits.scratchBytes),
      '--tmpfs',
      '/scratch',
      '--size',
      String(Math.min(limits.scratchBytes, 16 * 1024 * 1024)),
      '--tmpfs',
      '/tmp',
      // The root bwrap builds is a tmpfs; only /scratch and /tmp stay writable.
      '--remount-ro',
      '/',
      '--chdir',
      '/scratch',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/local/bin:/usr/bin:/bin',
      '--setenv',
      'HOME',
      '/scratch',
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--setenv',
      'FARM_COMMAND',
      command,
      ...proxyEnv,
      ...(proxied
        ? ['SSL_CERT_FILE', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS'].flatMap(
            (name) => ['--setenv', name, caBundle],
          )
        : []),
      '--',
      '/bin/sh',
      '-c',
      proxied ? proxiedScript() : 'exec /bin/sh -c "$FARM_COMMAND"',
    ];
  }

  private spawnSandbox(
    slot: number,
    etcDir: string,
    runDir: string,
    proxied: boolean,
    request: ShellRequest,
  ): Promise<ShellResult> {
    const limits = this.config.shell;
    const asRoot = process.getuid?.() === 0;
    const uid = limits.sandboxUidBase + slot;
    const prlimit = [
      `--nproc=${limits.processes}`,
      `--as=${limits.memoryBytes}`,
      `--cpu=${limits.cpuSeconds}`,
      `--fsize=${limits.scratchBytes}`,
      '--nofile=256',
      '--core=0',
    ];
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(
        'prlimit',
        [
          ...prlimit,
          '--',
          this.config.bwrapPath,
          ...this.bwrapArguments(etcDir, runDir, proxied, request.command),
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          ...(asRoot ? { uid, gid: uid } : {}),
        },
      );
      this.running.set(slot, child);
      const stdout = new CappedOutput(limits.outputBytes);
      const stderr = new CappedOutput(limits.outputBytes);
      let terminated: Termination | null = null;
      const stop = (reason: Termination) => {
        terminated ??= reason;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(() => stop('wall_time'), request.wallTimeMs);
      child.stdout?.on('data', (chunk: Buffer) => {
        if (!stdout.push(chunk)) stop('output_limit');
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        if (!stderr.push(chunk)) stop('output_limit');
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(
          new SandboxStartError(`the sandbox did not start: ${error.message}`, { cause: error }),
        );
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (code === EXIT_ON_SIGXCPU && terminated === null) terminated = 'cpu_time';
        const result: ShellResult = {
          exitCode: code,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          terminated,
          durationMs: Math.round(performance.now() - started),
        };
        this.logger.debug(
          { exitCode: code, terminated, durationMs: result.durationMs },
          'farm shell finished',
        );
        resolve(result);
      });
    });
  }
}
