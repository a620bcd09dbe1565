// One headless Chromium (Debian's) for one browser_cdp session, inside bubblewrap (docs/farm.md
// "Browser"): its own unprivileged uid when we are root, every namespace unshared, /usr read-only,
// a generated /etc with only what Chromium reads of the host's (fonts, its own settings), a
// size-capped tmpfs as home (profile, cache), and Chromium's own sandbox still on inside (nested
// user namespaces), so a page's renderer is confined twice. Its network namespace is empty: the
// egress bridge is its only way out, to the caller's farm device port on the capture proxy, whose
// project CA sits in the profile's NSS database; so every request is captured, with source `cdp`.
// DevTools speaks over descriptors 3 and 4 (no debugging port anyone else could reach).
import { execFile, type StdioOptions, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { promisify } from 'node:util';
import { forwarderStartLines, SANDBOX_PROXY_PORT, startEgressBridge } from '../egress-bridge.ts';
import type { FarmConfig } from '../farm-config.ts';
import type { FarmEgress } from '../farm-egress.ts';
import { memoryCgroupsFor, type SandboxCgroup, sandboxSpawn } from '../memory-cgroup.ts';
import { readOnlyUsrRoot } from '../sandbox-root.ts';
import { CdpPipe } from './cdp-pipe.ts';

const run = promisify(execFile);

/** The viewport screenshots show (CSS pixels). */
export const VIEWPORT = { width: 1280, height: 800 };
const HOME = '/home/farm';
/** How long Chromium may take to answer its first command. */
const START_TIMEOUT_MS = 20_000;
/** What of the browser's stderr is kept to explain a failed start. */
const STDERR_TAIL_BYTES = 4096;
/** How long the sandbox's processes may take to be gone once it is killed. */
const TEARDOWN_TIMEOUT_MS = 5_000;

export class BrowserStartError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'BrowserStartError';
  }
}

export interface SandboxedBrowser {
  cdp: CdpPipe;
  /** Ends the browser (gracefully, then by force) and removes everything it wrote. */
  close(): Promise<void>;
}

/** What of the host's /etc Chromium reads: libraries, fonts and its own settings. */
const HOST_ETC = ['alternatives', 'fonts', 'chromium', 'chromium.d'];

/** The /etc Chromium sees: users, names, and the host's parts above (mounted over these). */
function writeEtc(dir: string): void {
  mkdirSync(dir);
  for (const name of HOST_ETC) mkdirSync(join(dir, name));
  writeFileSync(join(dir, 'ld.so.cache'), '');
  writeFileSync(join(dir, 'passwd'), `root:x:0:0::/:/bin/sh\nfarm:x:1000:1000::${HOME}:/bin/sh\n`);
  writeFileSync(join(dir, 'group'), 'root:x:0:\nfarm:x:1000:\n');
  writeFileSync(join(dir, 'hostname'), 'farm\n');
  writeFileSync(join(dir, 'hosts'), '127.0.0.1 localhost farm\n::1 localhost\n');
  writeFileSync(join(dir, 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files\n');
}

/** An NSS database trusting the project CA for TLS servers: what Chromium on Linux reads. */
async function writeNssDatabase(dir: string, caPem: string): Promise<void> {
  mkdirSync(dir);
  const caFile = join(dir, 'project-ca.pem');
  writeFileSync(caFile, caPem);
  await run('certutil', ['-N', '-d', `sql:${dir}`, '--empty-password']);
  await run('certutil', [
    '-A',
    '-d',
    `sql:${dir}`,
    '-n',
    'capture project CA',
    '-t',
    'C,,',
    '-i',
    caFile,
  ]);
  rmSync(caFile);
  // Copied into the sandbox's home at start; a public certificate, nothing secret.
  for (const name of ['cert9.db', 'key4.db', 'pkcs11.txt']) chmodSync(join(dir, name), 0o644);
}

function chromiumFlags(): string[] {
  return [
    '--headless',
    '--remote-debugging-pipe',
    `--user-data-dir=${HOME}/profile`,
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-default-apps',
    '--disable-extensions',
    '--disable-features=Translate,MediaRouter,OptimizationHints',
    '--password-store=basic',
    '--no-pings',
    '--mute-audio',
    '--hide-scrollbars',
    // Every request, loopback names included (Chromium bypasses those by default), goes to the
    // forwarder, i.e. to the capture proxy.
    `--proxy-server=http://127.0.0.1:${SANDBOX_PROXY_PORT}`,
    '--proxy-bypass-list=<-loopback>',
    `--window-size=${VIEWPORT.width},${VIEWPORT.height}`,
    '--disk-cache-size=33554432',
    '--renderer-process-limit=4',
    '--js-flags=--max-old-space-size=512',
    'about:blank',
  ];
}

function bwrapArguments(config: FarmConfig, workDir: string): string[] {
  const homeBytes = config.browser.homeBytes;
  return [
    '--unshare-all',
    '--die-with-parent',
    // The host pid of the sandbox's init: once it is gone, every process inside is.
    '--info-fd',
    '5',
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
    join(workDir, 'etc'),
    '/etc',
    ...[...HOST_ETC, 'ld.so.cache'].flatMap((name) => [
      '--ro-bind-try',
      `/etc/${name}`,
      `/etc/${name}`,
    ]),
    '--ro-bind',
    join(workDir, 'run'),
    '/run/farm',
    '--proc',
    '/proc',
    // Chromium's shared memory lives in /dev/shm: a tmpfs of its own with a size. /dev itself is
    // bwrap's unsized tmpfs (RLIMIT_AS does not count tmpfs pages), so it is made read-only after
    // /dev/shm is mounted on it; its device nodes stay usable (a read-only mount stops no I/O to
    // a device).
    '--dev',
    '/dev',
    '--size',
    String(homeBytes),
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--size',
    String(homeBytes),
    '--tmpfs',
    HOME,
    '--size',
    String(64 * 1024 * 1024),
    '--tmpfs',
    '/tmp',
    '--remount-ro',
    '/',
    '--chdir',
    HOME,
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--setenv',
    'HOME',
    HOME,
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--',
    '/bin/sh',
    '-c',
    [
      ...forwarderStartLines(),
      `mkdir -p ${HOME}/.pki && cp -r /run/farm/nssdb ${HOME}/.pki/nssdb`,
      'exec "$@"',
    ].join('\n'),
    'farm-browser',
    config.chromiumPath,
    ...chromiumFlags(),
  ];
}

/** Starts the browser for `slot` (its uid) with its network bridged to `egress`. */
export async function startSandboxedBrowser(
  config: FarmConfig,
  slot: number,
  egress: FarmEgress,
): Promise<SandboxedBrowser> {
  const workDir = mkdtempSync(join(tmpdir(), 'farm-browser-'));
  let bridge: Server | undefined;
  let sandbox: RunningSandbox | undefined;
  let cgroup: SandboxCgroup | undefined;
  const cleanUp = async () => {
    await sandbox?.kill();
    await cgroup?.remove();
    if (bridge) await new Promise((resolve) => bridge?.close(resolve));
    rmSync(workDir, { recursive: true, force: true });
  };
  try {
    // Its memory together, /dev/shm included, where cgroups can be made (memory-cgroup.ts); where
    // they can, no browser starts without one.
    cgroup = await (await memoryCgroupsFor(config.cgroupParent))?.create(
      `browser-${process.pid}-${slot}-${randomUUID().slice(0, 8)}`,
      config.browser.sandboxMemoryBytes,
    );
    // bwrap runs as the sandbox uid and must read what it binds; nothing here is secret.
    chmodSync(workDir, 0o755);
    writeEtc(join(workDir, 'etc'));
    const runDir = join(workDir, 'run');
    mkdirSync(runDir, { mode: 0o755 });
    await writeNssDatabase(join(runDir, 'nssdb'), egress.caCertificatePem);
    bridge = await startEgressBridge(join(runDir, 'proxy.sock'), egress);
    sandbox = spawnSandbox(config, slot, workDir, cgroup);
    const { cdp } = sandbox;
    try {
      await cdp.send('Browser.getVersion', {}, { timeoutMs: START_TIMEOUT_MS });
    } catch (error) {
      throw new BrowserStartError(
        `the browser did not start: ${(error as Error).message}; ${lastLines(sandbox.stderr())}`,
        { cause: error },
      );
    }
    // The profile is thrown away, so there is nothing for a graceful Browser.close to save.
    return { cdp, close: cleanUp };
  } catch (error) {
    await cleanUp();
    throw error instanceof BrowserStartError
      ? error
      : new BrowserStartError(`the browser did not start: ${(error as Error).message}`, {
          cause: error,
        });
  }
}

interface RunningSandbox {
  cdp: CdpPipe;
  stderr(): string;
  /** Ends the sandbox at once and waits until every process in it is gone. */
  kill(): Promise<void>;
}

function spawnSandbox(
  config: FarmConfig,
  slot: number,
  workDir: string,
  cgroup: SandboxCgroup | undefined,
): RunningSandbox {
  const asRoot = process.getuid?.() === 0;
  const uid = config.browser.sandboxUidBase + slot;
  // Chromium reserves far more address space than it uses, so no RLIMIT_AS; V8's heap is capped
  // by its flag and all of its memory by the cgroup. Threads count against the process limit.
  const sandbox = [
    'prlimit',
    '--nproc=1024',
    '--nofile=4096',
    '--core=0',
    `--fsize=${config.browser.homeBytes}`,
    '--',
    config.bwrapPath,
    ...bwrapArguments(config, workDir),
  ];
  const stdio: StdioOptions = ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'pipe'];
  const how = sandboxSpawn(sandbox, cgroup, asRoot ? uid : undefined);
  const child = spawn(how.file, how.args, { stdio, uid: how.uid, gid: how.gid });
  const pipes = child.stdio as unknown as [null, null, Readable, Writable, Readable, Readable];
  let stderrTail = '';
  pipes[2].on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
  });
  const cdp = new CdpPipe(pipes[4], pipes[3]);
  const sandboxPid = readSandboxPid(pipes[5]);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      cdp.close(`the browser exited (${signal ?? `code ${code}`})`);
      resolve();
    });
    child.once('error', (error) => {
      cdp.close(`the browser did not start: ${error.message}`);
      resolve();
    });
  });
  return {
    cdp,
    stderr: () => stderrTail,
    async kill() {
      const pid = await Promise.race([sandboxPid, exited.then(() => null)]);
      // The sandbox's init, so bwrap outside reaps it (its namespace dies with it) and nothing
      // is left to the host's init; bwrap itself when it never reported one.
      if (pid !== null) signal(pid, 'SIGKILL');
      else child.kill('SIGKILL');
      await Promise.race([
        exited,
        new Promise((resolve) => setTimeout(resolve, TEARDOWN_TIMEOUT_MS)),
      ]);
      child.kill('SIGKILL');
      if (pid !== null) await waitUntilGone(pid);
    },
  };
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** bwrap's --info-fd report: the sandbox init's pid, or null when it never came. */
function readSandboxPid(info: Readable): Promise<number | null> {
  return new Promise((resolve) => {
    let text = '';
    info.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    info.on('error', () => resolve(null));
    info.on('close', () => {
      const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
      resolve(pid ? Number(pid) : null);
    });
  });
}

/** Polls until the process is gone or a zombie (the kernel has then killed its namespace). */
async function waitUntilGone(pid: number): Promise<void> {
  const deadline = Date.now() + TEARDOWN_TIMEOUT_MS;
  while (Date.now() < deadline) {
    let state: string | undefined;
    try {
      state = /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
    } catch {
      return;
    }
    if (state === 'Z' || state === 'X') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The last lines of Chromium's stderr, without its noise about D-Bus (absent in the sandbox). */
function lastLines(stderr: string): string {
  const lines = stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !/dbus|D-Bus/i.test(line))
    .slice(-3);
  return lines.length > 0 ? `stderr: ${lines.join(' | ')}` : 'no output';
}
