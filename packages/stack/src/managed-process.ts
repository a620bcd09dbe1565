// A child process the stack owns: its output goes to the stack's log line by line, and stop()
// ends it with a polite signal first and SIGKILL after a grace period.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { StackError } from './errors.ts';

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  uid?: number;
  gid?: number;
  logger: Logger;
  /** Signal that asks the program to finish cleanly (postgres: SIGINT is its "fast" shutdown). */
  stopSignal?: NodeJS.Signals;
  /**
   * Have the kernel send the program its stop signal when the stack's process dies, however it
   * dies (prctl PR_SET_PDEATHSIG, set by util-linux `setpriv` before it execs the program). For
   * servers holding a port the next start needs; not for Postgres, which ends its own way.
   */
  endsWithParent?: boolean;
}

const liveChildren = new Set<ChildProcess>();

// A crashed or interrupted parent must not leave children behind: kill what is left on exit.
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

export class ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private readonly stopSignal: NodeJS.Signals;
  private stopping = false;
  /** The last lines the program printed, quoted when it fails to start. */
  private readonly tail: string[] = [];

  constructor(options: ManagedProcessOptions) {
    this.name = options.name;
    this.stopSignal = options.stopSignal ?? 'SIGTERM';
    const spawnOptions: SpawnOptions = {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    };
    if (options.uid !== undefined) spawnOptions.uid = options.uid;
    if (options.gid !== undefined) spawnOptions.gid = options.gid;
    // setpriv runs after the uid switch (a credential change clears the death signal) and execs
    // the program in place, so the pid stays the program's.
    this.child = options.endsWithParent
      ? spawn(
          '/usr/bin/setpriv',
          [
            '--pdeathsig',
            this.stopSignal.replace(/^SIG/, ''),
            '--',
            options.command,
            ...options.args,
          ],
          spawnOptions,
        )
      : spawn(options.command, options.args, spawnOptions);
    liveChildren.add(this.child);
    const log = options.logger.child({ component: options.name });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.tail.push(line);
        if (this.tail.length > 20) this.tail.shift();
        log.info(line);
      });
    }
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => {
        log.error({ err: error }, 'could not start');
        liveChildren.delete(this.child);
        resolve(null);
      });
      this.child.once('exit', (code, signal) => {
        liveChildren.delete(this.child);
        if (!this.stopping) log.warn({ code, signal }, 'exited');
        resolve(code);
      });
    });
  }

  get running(): boolean {
    return (
      this.child.exitCode === null && this.child.signalCode === null && liveChildren.has(this.child)
    );
  }

  /** What the program printed last, for error messages. */
  recentOutput(): string {
    return this.tail.join('\n');
  }

  /** Rejects with `process_exited` if the program ends before `ready` settles. */
  async whileRunning<T>(ready: Promise<T>): Promise<T> {
    const died = this.exited.then((code) => {
      throw new StackError(
        'process_exited',
        `${this.name} exited (code ${code}) while starting:\n${this.recentOutput()}`,
      );
    });
    return Promise.race([ready, died]);
  }

  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.child.kill(this.stopSignal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
