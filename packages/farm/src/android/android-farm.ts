// The farm host's Android devices through Debian's adb (docs/farm.md "Android devices"): every
// call is one `adb -P <port> -s <serial> …` client run against the host's adb server, with an
// argument array and a time limit. User input never reaches `adb shell` (whose words the device's
// shell interprets): package names go through `adb uninstall`, which quotes them, after
// validation; listing runs a fixed command line. aapt, which parses the caller's APK (a zip and a
// binary manifest), runs in a bubblewrap sandbox when one is configured.
import { chmod, chown, copyFile, mkdtemp, realpath, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AppIdentity,
  type AppInstaller,
  AppInstallerError,
  type AppOutcome,
  type AppPackageFilter,
  type AppTarget,
} from '../apps/app-installer.ts';
import { readOnlyUsrRoot } from '../sandbox-root.ts';
import { ANDROID_PACKAGE_NAME, parseBadging } from './apk-badging.ts';
import { type CommandResult, runCommand } from './run-command.ts';

export interface AndroidFarmOptions {
  adbPath: string;
  aaptPath: string;
  /** The host's adb server (`adb -P`); it is never started by the tool server. */
  adbServerPort: number;
  /** list, uninstall and aapt runs. */
  commandTimeoutMs: number;
  /** Streaming an APK and the device's verification of it. */
  installTimeoutMs: number;
  /**
   * Runs aapt in bubblewrap: no network, nothing of the host but /usr (read-only), the APK bound
   * read-only, rlimits, and (when the tool server is root) this unprivileged uid.
   */
  aaptSandbox?: { bwrapPath: string; uid: number };
}

/** Where the APK and the aapt binary are inside aapt's sandbox. */
const SANDBOXED_APK = '/farm/package.apk';
const SANDBOXED_AAPT = '/farm/aapt';

/** adb's client errors that mean the device, not the package, is the problem. */
const DEVICE_UNAVAILABLE =
  /device '[^']*' not found|device offline|device unauthorized|no devices\/emulators found|device still (connecting|authorizing)|failed to get feature set|closed/i;
/** adb's and the package manager's status: `Success`, or `Failure [REASON: detail]`. */
const FAILURE = /Failure \[([A-Z0-9_]+)?[^\]\n]*\]/;

export class AndroidFarm implements AppInstaller {
  readonly platform = 'android' as const;
  readonly fileExtension = '.apk';
  private readonly options: AndroidFarmOptions;
  private readonly shutdown = new AbortController();

  constructor(options: AndroidFarmOptions) {
    this.options = options;
  }

  /** Server shutdown: kills every adb and aapt run in flight; later calls are refused. */
  async close(): Promise<void> {
    this.shutdown.abort();
  }

  async inspect(file: string): Promise<AppIdentity> {
    const sandbox = this.options.aaptSandbox;
    const result = sandbox
      ? await this.inspectSandboxed(file, sandbox)
      : await this.run(this.options.aaptPath, ['dump', 'badging', file], {
          timeoutMs: this.options.commandTimeoutMs,
        });
    const identity = result.exitCode === 0 ? parseBadging(result.stdout) : null;
    if (!identity) {
      const stderr = result.stderr
        .replaceAll(file, 'the file')
        .replaceAll(SANDBOXED_APK, 'the file');
      const detail = firstLine(stderr) || 'no package line';
      throw new AppInstallerError('bad_package', `not a valid APK (aapt: ${detail})`);
    }
    return identity;
  }

  /**
   * `aapt dump badging` in bubblewrap (docs/farm.md "Android devices"): every namespace unshared
   * (no network), capabilities dropped, /usr read-only and nothing else of the host, the APK and
   * the aapt binary bound read-only, address space, CPU, processes and files limited. A parser
   * bug reached by a crafted APK then runs as an unprivileged uid in an empty sandbox, not as the
   * tool server. The APK is copied into a directory of its own that only that uid may enter (the
   * caller's directory stays private); bwrap, running as that uid, must resolve what it binds.
   */
  private async inspectSandboxed(
    file: string,
    sandbox: { bwrapPath: string; uid: number },
  ): Promise<CommandResult> {
    const asRoot = process.getuid?.() === 0;
    const staging = await mkdtemp(join(tmpdir(), 'farm-aapt-'));
    try {
      const staged = join(staging, 'package.apk');
      // A copy, not a hard link: the owner and mode set below would otherwise be the caller's
      // file's too (a link shares its inode).
      await copyFile(file, staged);
      if (asRoot) {
        await chown(staging, sandbox.uid, sandbox.uid);
        await chown(staged, sandbox.uid, sandbox.uid);
      }
      await chmod(staged, 0o400);
      const aapt = await realpath(this.options.aaptPath);
      const seconds = Math.max(1, Math.ceil(this.options.commandTimeoutMs / 1000));
      return await this.run(
        'prlimit',
        [
          '--as=2147483648',
          `--cpu=${seconds}`,
          '--nproc=64',
          '--nofile=64',
          '--fsize=0',
          '--core=0',
          '--',
          sandbox.bwrapPath,
          '--unshare-all',
          '--die-with-parent',
          '--new-session',
          '--cap-drop',
          'ALL',
          ...readOnlyUsrRoot(),
          '--ro-bind-try',
          '/etc/ld.so.cache',
          '/etc/ld.so.cache',
          '--ro-bind',
          aapt,
          SANDBOXED_AAPT,
          '--ro-bind',
          staged,
          SANDBOXED_APK,
          '--proc',
          '/proc',
          '--dev',
          '/dev',
          '--remount-ro',
          '/dev',
          '--remount-ro',
          '/',
          '--clearenv',
          '--setenv',
          'PATH',
          '/usr/bin:/bin',
          '--',
          SANDBOXED_AAPT,
          'dump',
          'badging',
          SANDBOXED_APK,
        ],
        {
          timeoutMs: this.options.commandTimeoutMs,
          label: 'aapt',
          ...(asRoot ? { uid: sandbox.uid } : {}),
        },
      );
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  async install(
    target: AppTarget,
    file: string,
    options: { replace: boolean },
  ): Promise<AppOutcome> {
    const args = ['install', ...(options.replace ? ['-r'] : []), file];
    const result = await this.adb(target, args, this.options.installTimeoutMs);
    // adb_install.cpp: exit 0 after printing the device's "Success"; otherwise
    // "adb: failed to install <file>: Failure [REASON …]" on stderr.
    const output = `${result.stdout}\n${result.stderr}`.replaceAll(file, 'the package');
    if (result.exitCode === 0 && /^Success/m.test(result.stdout)) {
      return { ok: true, message: 'Success', reason: null };
    }
    return this.failure(output);
  }

  async listPackages(target: AppTarget, filter: AppPackageFilter): Promise<string[]> {
    const args = ['shell', 'pm', 'list', 'packages', ...(filter === 'third_party' ? ['-3'] : [])];
    const result = await this.adb(target, args, this.options.commandTimeoutMs);
    if (result.exitCode !== 0) throw adbError(`${result.stdout}\n${result.stderr}`);
    return (
      result.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line.startsWith('package:'))
        .map((line) => line.slice('package:'.length))
        // Names as the device reports them (`android` itself has one segment).
        .filter((name) => /^[A-Za-z][A-Za-z0-9_.]*$/.test(name))
        .sort()
    );
  }

  async uninstall(target: AppTarget, packageName: string): Promise<AppOutcome> {
    if (!ANDROID_PACKAGE_NAME.test(packageName)) {
      throw new AppInstallerError('bad_package', `not an Android package name: ${packageName}`);
    }
    const result = await this.adb(
      target,
      ['uninstall', packageName],
      this.options.commandTimeoutMs,
    );
    // Without shell_v2 adb's exit code does not carry the device's; the status line does.
    if (/^Success/m.test(result.stdout)) return { ok: true, message: 'Success', reason: null };
    return this.failure(`${result.stdout}\n${result.stderr}`);
  }

  /** A device-side failure as an outcome; adb's own (no server, no device) as an error. */
  private failure(output: string): AppOutcome {
    const failure = FAILURE.exec(output);
    if (failure) return { ok: false, message: failure[0], reason: failure[1] ?? null };
    throw adbError(output);
  }

  private async adb(target: AppTarget, args: string[], timeoutMs: number): Promise<CommandResult> {
    await this.requireServer();
    return this.run(
      this.options.adbPath,
      ['-P', String(this.options.adbServerPort), '-s', target.serial, ...args],
      { timeoutMs },
    );
  }

  private async run(
    file: string,
    args: string[],
    options: { timeoutMs: number; uid?: number; label?: string },
  ): Promise<CommandResult> {
    if (this.shutdown.signal.aborted) {
      throw new AppInstallerError('device_unavailable', 'the farm is shutting down');
    }
    const result = await runCommand(file, args, {
      ...options,
      signal: this.shutdown.signal,
    }).catch((error: unknown) => {
      throw this.shutdown.signal.aborted
        ? new AppInstallerError('device_unavailable', 'the farm is shutting down', { cause: error })
        : new AppInstallerError('tool_failed', `cannot run ${file}`, { cause: error });
    });
    if (result.timedOut) {
      throw new AppInstallerError(
        'timeout',
        `${options.label ?? (args[0] === '-P' ? 'adb' : file)} timed out after ${options.timeoutMs} ms`,
      );
    }
    return result;
  }

  /**
   * An adb client finding no server starts one (a daemon that would outlive us, on whatever
   * port); the farm host runs its own, so its absence is reported instead.
   */
  private requireServer(): Promise<void> {
    const port = this.options.adbServerPort;
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, timeout: 2_000 });
      const fail = () => {
        socket.destroy();
        reject(
          new AppInstallerError(
            'device_unavailable',
            `the farm host's adb server is not running (port ${port})`,
          ),
        );
      };
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('timeout', fail);
      socket.once('error', fail);
    });
  }
}

function adbError(output: string): AppInstallerError {
  if (DEVICE_UNAVAILABLE.test(output)) {
    return new AppInstallerError('device_unavailable', `device unavailable: ${firstLine(output)}`);
  }
  return new AppInstallerError('tool_failed', `adb failed: ${firstLine(output) || 'no output'}`);
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.length > 0 && !line.startsWith('Performing')) ?? ''
  ).slice(0, 300);
}
