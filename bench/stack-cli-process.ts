// `stack up` run as its own process for benchmarks, as a person runs it: the time from spawn to
// the banner's last line, the banner's variables, and a stop that leaves no process behind (the
// stack runs in its own process group, so a stack that will not stop is killed with its servers).
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO_ROOT = join(import.meta.dirname, '..');
export const STACK_BIN = join(REPO_ROOT, 'packages', 'stack', 'bin', 'stack.mjs');

/** The line `up` prints once the stack is ready, after its banner (packages/stack/src/cli.ts). */
const READY_LINE = 'Press Ctrl-C to stop.';
/** A banner line: `NAME  value`, the name padded (status-variables.ts formatPretty). */
const BANNER_LINE = /^([A-Z][A-Z0-9_]*) +(\S*)$/;
const TAIL_LINES = 20;

/** A `notable` log line (one per service started or stopped), as seen by the bench. */
export interface StackEvent {
  /** Milliseconds from spawn to the line. */
  at: number;
  component: string;
  msg: string;
}

export interface StackRun {
  /** The stack's pid, also its process group's id. */
  pid: number;
  /** The banner's variables (DB_URL, PHONE_SETUP_URL, …) once ready. */
  variables: Record<string, string>;
  /** Milliseconds from spawn to the ready line. */
  readyMs: number;
  /** performance.now() at the ready line: where the phone's part starts. */
  readyAt: number;
  /**
   * CPU ms the stack's process tree used from spawn to the ready line (every live process's own
   * time plus that of the children it has reaped: initdb, the supabase CLI). A figure a busy
   * shared machine disturbs far less than the wall-clock time.
   */
  readyCpuMs: number;
  /** readyCpuMs by command name (see treeCpuByCommand). */
  cpuByCommand: Map<string, number>;
  /** The notable lines up to the ready line, for where the start's time went. */
  events: StackEvent[];
  /** Warnings and errors it logged (pino level 40 and up), as `component: msg`. */
  warnings: string[];
  /** Asks the stack to stop (SIGINT, as Ctrl-C) and resolves with the ms it took. */
  stop(): Promise<number>;
}

/** Stacks started and not yet stopped: what killRunningStacks() ends on an abort. */
const running = new Map<number, ChildProcess>();

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

async function stopChild(child: ChildProcess, graceMs: number): Promise<number> {
  const started = performance.now();
  const pid = child.pid as number;
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  const timer = setTimeout(() => killGroup(pid), graceMs);
  await exited(child);
  clearTimeout(timer);
  // Whatever the stack left in its group (a server it failed to stop) goes with it.
  killGroup(pid);
  running.delete(pid);
  return performance.now() - started;
}

/** Clock ticks per second in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/**
 * CPU ms of `root` and its live descendants by command name (proc(5) stat: utime + stime), and
 * under `<command> (ended children)` what the children each has reaped used (cutime + cstime):
 * the stack's initdb and supabase CLI runs, Postgres's finished backends.
 */
function treeCpuByCommand(root: number): Map<string, number> {
  const parents = new Map<number, number>();
  const usage = new Map<number, { command: string; own: number; reaped: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // the process ended in between
    }
    // Node names its main thread, and so the process's comm, MainThread.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const command = comm === 'MainThread' ? 'node' : comm;
    // After the command: state, ppid, …; utime, stime, cutime, cstime are fields 14 to 17.
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    parents.set(Number(entry), fields[1] as number);
    usage.set(Number(entry), {
      command,
      own: (fields[11] as number) + (fields[12] as number),
      reaped: (fields[13] as number) + (fields[14] as number),
    });
  }
  const byCommand = new Map<string, number>();
  const add = (name: string, ticks: number) => {
    if (ticks > 0) byCommand.set(name, (byCommand.get(name) ?? 0) + (ticks * 1000) / USER_HZ);
  };
  for (const [pid, { command, own, reaped }] of usage) {
    let ancestor: number | undefined = pid;
    while (ancestor !== undefined && ancestor > 1 && ancestor !== root) {
      ancestor = parents.get(ancestor);
    }
    if (ancestor !== root) continue;
    add(command, own);
    add(`${command} (ended children)`, reaped);
  }
  return byCommand;
}

/** Keeps a JSON log line (`--log-format json`) that is notable, a warning or an error. */
function noteEvent(line: string, at: number, events: StackEvent[], warnings: string[]): void {
  try {
    const entry = JSON.parse(line) as {
      level?: number;
      notable?: boolean;
      component?: string;
      msg?: string;
    };
    const component = entry.component ?? 'stack';
    if (entry.notable) events.push({ at, component, msg: entry.msg ?? '' });
    if ((entry.level ?? 0) >= 40) warnings.push(`${component}: ${entry.msg ?? ''}`);
  } catch {
    // Not JSON after all: a line some child printed as it was.
  }
}

/**
 * Runs `node stack.mjs up <args>` and resolves once it prints the ready line; rejects (having
 * killed it) when it exits first or takes longer than `timeoutMs`.
 */
export async function startStackProcess(args: string[], timeoutMs: number): Promise<StackRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [STACK_BIN, 'up', ...args], {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.set(child.pid as number, child);
  const tail: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', remember);
  const variables: Record<string, string> = {};
  const events: StackEvent[] = [];
  const warnings: string[] = [];
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  try {
    const readyAt = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the stack was not ready within ${timeoutMs} ms`)),
        timeoutMs,
      );
      lines.on('line', (line) => {
        remember(line);
        if (line.startsWith('{')) noteEvent(line, performance.now() - started, events, warnings);
        const banner = BANNER_LINE.exec(line);
        if (banner) variables[banner[1] as string] = banner[2] as string;
        if (line === READY_LINE) {
          clearTimeout(timer);
          resolve(performance.now());
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the stack exited (${signal ?? code}) before it was ready`));
      });
    });
    const cpuByCommand = treeCpuByCommand(child.pid as number);
    return {
      pid: child.pid as number,
      variables,
      readyMs: readyAt - started,
      readyAt,
      readyCpuMs: [...cpuByCommand.values()].reduce((sum, ms) => sum + ms, 0),
      cpuByCommand,
      events,
      warnings,
      stop: () => stopChild(child, 60_000),
    };
  } catch (error) {
    await stopChild(child, 10_000);
    throw new Error(`${(error as Error).message}; its last lines:\n${tail.join('\n')}`, {
      cause: error,
    });
  }
}

/** Ends every stack still running: politely, then with SIGKILL to its group. For aborts. */
export async function stopRunningStacks(): Promise<void> {
  await Promise.all([...running.values()].map((child) => stopChild(child, 20_000)));
}

/** The synchronous last resort (process 'exit'): SIGKILL to every stack group still running. */
export function killRunningStacks(): void {
  for (const pid of running.keys()) killGroup(pid);
}

/** Where a start's time went, in ms, from the notable lines (packages/stack/src/stack.ts order). */
export interface StartPhases {
  /** Spawn → postgres accepts connections: Node's start, initdb on a new data dir, postgres. */
  postgresMs: number;
  /** The platform bootstrap, the migrations (`supabase migration up`) and, when new, the seed. */
  migrationsMs: number;
  /** Functions, PostgREST, auth, realtime and the gateway. */
  apiMs: number;
  /** The proxy, the tool server, the dashboard and the status service. */
  servicesMs: number;
  /** The last service → the ready line: the LAN phone's set-up link and the banner. */
  bannerMs: number;
  readyMs: number;
  /** CPU ms of the stack's process tree up to the ready line (StackRun.readyCpuMs). */
  readyCpuMs: number;
  cpuByCommand: Map<string, number>;
}

export function splitStart(run: StackRun): StartPhases {
  const at = (component: string) => {
    const found = run.events.filter((event) => event.component === component);
    const last = found.findLast((event) => event.at <= run.readyMs && event.msg !== 'stopped');
    if (!last) throw new Error(`the stack logged no notable ${component} line before it was ready`);
    return last.at;
  };
  const postgres = at('postgres');
  const migrations = at('migrations');
  const gateway = at('gateway');
  const status = at('status');
  return {
    postgresMs: postgres,
    migrationsMs: migrations - postgres,
    apiMs: gateway - migrations,
    servicesMs: status - gateway,
    bannerMs: run.readyMs - status,
    readyMs: run.readyMs,
    readyCpuMs: run.readyCpuMs,
    cpuByCommand: run.cpuByCommand,
  };
}
