// farm_run_shell's sandbox (docs/farm.md "Shell"): Debian's bubblewrap with every namespace
// unshared, the system (/usr) read-only, a generated /etc, private size-capped tmpfs mounts as the
// only writable places (/dev included: RLIMIT_AS does not count tmpfs pages), no capabilities, and rlimits for CPU, address space, file size, open files
// and processes (per sandbox: each concurrent sandbox runs as its own unprivileged uid when we
// are root, in its own user namespace). The network namespace is empty: with network "proxy" the
// only way out is a forwarder on the sandbox's loopback that reaches the caller's farm device port
// on the capture proxy through a Unix socket, so everything fetched is captured. Wall time and
// output are enforced here: the sandbox is killed (its PID namespace dies with it) when either runs
// over.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { forwarderStartLines, SANDBOX_PROXY_PORT, startEgressBridge } from '../egress-bridge.ts';
import type { FarmConfig } from '../farm-config.ts';
import type { FarmEgress } from '../farm-egress.ts';
import {
  type MemoryCgroups,
  memoryCgroupsFor,
  type SandboxCgroup,
  sandboxSpawn,
} from '../memory-cgroup.ts';
import { readOnlyUsrRoot } from '../sandbox-root.ts';

const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** Where the command's wait status comes back: a pipe on this descriptor (never its stdout). */
const STATUS_FD = 3;
/** The share of the CPU-time limit a signalled command must have used to count as stopped by it. */
const CPU_TIME_MARGIN = 0.5;
/** The largest /tmp and /dev/shm, each (besides /scratch). */
const SIDE_TMPFS_BYTES = 16 * 1024 * 1024;

/**
 * The command's parent inside the sandbox (perl-base is Essential on Debian, so on every farm
 * host): it runs `sh -c command` as its child and reports the child's raw wait status (its signal
 * or exit code) and CPU time on STATUS_FD. bwrap folds a death by signal into exit code 128 + n,
 * which a command can also choose (`exit 152`), so a CPU-time kill is judged from this report.
 * The child does not inherit the descriptor.
 */
const STATUS_REPORTER = [
  `open(my $status, '>&=', ${STATUS_FD}) or die "farm: no status descriptor\\n";`,
  'my $pid = fork;',
  'defined $pid or die "farm: fork: $!\\n";',
  "if ($pid == 0) { close $status; exec '/bin/sh', '-c', $ENV{FARM_COMMAND}; exit 127 }",
  'waitpid($pid, 0);',
  'my $wait = $?;',
  'my (undef, undef, $user, $system) = times;',
  'printf $status "%d %d %.2f\\n", $wait & 127, $wait >> 8, $user + $system;',
  'close $status;',
  'exit(($wait & 127) ? 128 + ($wait & 127) : $wait >> 8);',
].join('\n');

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(constants.signals).map(([name, number]) => [number, name]),
);

/** The command's wait status as the reporter saw it. */
interface CommandStatus {
  signal: number;
  exitCode: number;
  cpuSeconds: number;
}

/**
 * The reporter's one line, or null when there is none or more than one: a command running as the
 * same uid could open the reporter's descriptor through /proc and write a line of its own, and
 * then nothing it says is taken (the run is reported by bwrap's exit code, with no termination).
 * A command that goes further (writes a line and kills the reporter) only shapes the report of
 * its own run, as its exit code and output do; no accidental exit code reads as a CPU-time kill.
 */
function parseStatus(text: string): CommandStatus | null {
  const lines = text.split('\n').filter((line) => line !== '');
  if (lines.length !== 1) return null;
  const match = /^(\d{1,3}) (\d{1,3}) (\d{1,9}\.\d\d)$/.exec(lines[0] ?? '');
  if (!match) return null;
  return { signal: Number(match[1]), exitCode: Number(match[2]), cpuSeconds: Number(match[3]) };
}

export interface ShellRequest {
  command: string;
  /** `none`: no network at all; `proxy`: only through the capture proxy (egress required). */
  network: 'none' | 'proxy';
  egress?: FarmEgress;
  /** Within the configured wall-time limit. */
  wallTimeMs: number;
}

export type Termination = 'wall_time' | 'output_limit' | 'cpu_time' | 'memory';

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

/** Starts the forwarder (network proxy) and waits for its socket, then hands over to the reporter. */
function sandboxScript(proxied: boolean): string {
  return [...(proxied ? forwarderStartLines() : []), 'exec /usr/bin/perl -e "$1"'].join('\n');
}

/** Reads a stream to its end (the status pipe: one short line). */
function collect(stream: Readable | null | undefined): () => string {
  let text = '';
  stream?.on('data', (chunk: Buffer) => {
    if (text.length < 4096) text += chunk.toString('utf8');
  });
  stream?.on('error', () => undefined);
  return () => text;
}

export class ShellSandbox {
  private readonly config: FarmConfig;
  private readonly logger: Logger;
  private readonly running = new Map<number, ChildProcess>();
  /** The generated /etc per trusted CA, written once and bound read-only into every sandbox. */
  private readonly etcDirs = new Map<string, string>();
  private closed = false;
  /** Whether sandboxes get a memory cgroup each: found out once, at the first run. */
  private cgroups: Promise<MemoryCgroups | undefined> | undefined;

  constructor(config: FarmConfig, logger: Logger) {
    this.config = config;
    this.logger = logger;
  }

  private memoryCgroups(): Promise<MemoryCgroups | undefined> {
    this.cgroups ??= memoryCgroupsFor(this.config.cgroupParent).then((cgroups) => {
      if (cgroups) {
        this.logger.info({ version: cgroups.version }, 'farm shells get a memory cgroup each');
      } else {
        this.logger.warn(
          'no memory cgroup can be made here (not root, or no delegated cgroup v2 directory in ' +
            'farm.cgroupParent): farm shell memory is bounded per process only',
        );
      }
      return cgroups;
    });
    return this.cgroups;
  }

  async run(request: ShellRequest): Promise<ShellResult> {
    if (this.closed) throw new SandboxStartError('the farm is shutting down');
    const limits = this.config.shell;
    const slot = this.freeSlot();
    if (slot === undefined) throw new ShellBusyError(limits.maxConcurrent);
    let workDir: string | undefined;
    let bridge: Server | undefined;
    let cgroup: SandboxCgroup | undefined;
    try {
      // Where sandboxes get a cgroup, none runs without one (it would run unbounded).
      cgroup = await (await this.memoryCgroups())
        ?.create(
          `shell-${process.pid}-${slot}-${randomUUID().slice(0, 8)}`,
          limits.sandboxMemoryBytes,
        )
        .catch((error: unknown) => {
          throw new SandboxStartError('the sandbox memory cgroup could not be made', {
            cause: error,
          });
        });
      workDir = mkdtempSync(join(tmpdir(), 'farm-shell-'));
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
      return await this.spawnSandbox(slot, etcDir, runDir, proxied, request, cgroup);
    } finally {
      this.running.delete(slot);
      await cgroup?.remove();
      if (bridge) await new Promise((resolve) => bridge?.close(resolve));
      if (workDir) rmSync(workDir, { recursive: true, force: true });
    }
  }

  /**
   * Kills every running sandbox (server shutdown) and refuses new ones: a run that passed its
   * first check before this and was still setting up (the egress bridge) starts nothing, as
   * spawnSandbox checks again in the same tick as its spawn.
   */
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
      ...readOnlyUsrRoot(),
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
      // --dev is a tmpfs of its own with no size (half the host's RAM) and /dev/shm a directory
      // in it; RLIMIT_AS does not count tmpfs pages, so both would let a command hold host
      // memory past every limit. /dev/shm gets a sized tmpfs, and /dev is made read-only after
      // it (device nodes such as /dev/null stay writable: a read-only mount does not stop I/O
      // to a device).
      '--dev',
      '/dev',
      '--size',
      String(Math.min(limits.scratchBytes, SIDE_TMPFS_BYTES)),
      '--tmpfs',
      '/dev/shm',
      '--remount-ro',
      '/dev',
      '--size',
      String(limits.scratchBytes),
      '--tmpfs',
      '/scratch',
      '--size',
      String(Math.min(limits.scratchBytes, SIDE_TMPFS_BYTES)),
      '--tmpfs',
      '/tmp',
      // The root bwrap builds is a tmpfs; only /scratch, /tmp and /dev/shm stay writable.
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
      sandboxScript(proxied),
      'farm-shell',
      STATUS_REPORTER,
    ];
  }

  private spawnSandbox(
    slot: number,
    etcDir: string,
    runDir: string,
    proxied: boolean,
    request: ShellRequest,
    cgroup: SandboxCgroup | undefined,
  ): Promise<ShellResult> {
    const limits = this.config.shell;
    const asRoot = process.getuid?.() === 0;
    const uid = limits.sandboxUidBase + slot;
    const prlimit = [
      `--nproc=${limits.processes}`,
      `--as=${limits.memoryBytes}`,
      // Soft limit: SIGXCPU; a process that ignores it gets SIGKILL a second later (setrlimit(2)).
      // With soft and hard equal the kernel sends SIGKILL at once.
      `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
      `--fsize=${limits.scratchBytes}`,
      '--nofile=256',
      '--core=0',
    ];
    const started = performance.now();
    // close() may have come while the run was setting up; checked in the tick of the spawn, and
    // close() kills whatever is in `running` after it.
    if (this.closed) return Promise.reject(new SandboxStartError('the farm is shutting down'));
    return new Promise((resolve, reject) => {
      const sandbox = [
        'prlimit',
        ...prlimit,
        '--',
        this.config.bwrapPath,
        ...this.bwrapArguments(etcDir, runDir, proxied, request.command),
      ];
      const how = sandboxSpawn(sandbox, cgroup, asRoot ? uid : undefined);
      const child = spawn(how.file, how.args, {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
        uid: how.uid,
        gid: how.gid,
      });
      this.running.set(slot, child);
      const stdout = new CappedOutput(limits.outputBytes);
      const stderr = new CappedOutput(limits.outputBytes);
      const statusText = collect(child.stdio[STATUS_FD] as Readable | null);
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
      child.once('close', async (code, signal) => {
        clearTimeout(timer);
        // The cgroup's OOM killer ended it: all its memory together was over the limit.
        if (terminated === null && (await cgroup?.oomKilled())) terminated = 'memory';
        const status = terminated === null ? parseStatus(statusText()) : null;
        let exitCode = terminated === 'memory' ? null : code;
        let signalName = terminated === 'memory' ? 'SIGKILL' : (signal as string | null);
        if (status) {
          exitCode = status.signal === 0 ? status.exitCode : null;
          signalName = status.signal === 0 ? null : (SIGNAL_NAMES.get(status.signal) ?? null);
          // RLIMIT_CPU's SIGXCPU, or its SIGKILL a second later, to a command that used its CPU
          // time; a command that signals itself early (kill -XCPU $$) is not a CPU-time kill.
          // times(2) reports the child's user and system time from tick-sampled, scaled counters
          // that fall short of the runtime the kernel enforced: 1.95 s for a 2 s limit on a quiet
          // host, and under 1.8 s on a busy one (steal and contention skew the sampling). Half
          // the limit still tells the two apart: a self-signalling command has spent next to
          // nothing, and one that spent over half its budget first is misnamed harmlessly.
          const cpuSignal = signalName === 'SIGXCPU' || signalName === 'SIGKILL';
          if (cpuSignal && status.cpuSeconds >= limits.cpuSeconds * CPU_TIME_MARGIN) {
            terminated = 'cpu_time';
          }
        }
        const result: ShellResult = {
          exitCode,
          signal: signalName,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          terminated,
          durationMs: Math.round(performance.now() - started),
        };
        this.logger.debug(
          { exitCode, signal: signalName, terminated, durationMs: result.durationMs },
          'farm shell finished',
        );
        resolve(result);
      });
    });
  }
}
