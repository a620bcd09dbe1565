// A memory cgroup per farm sandbox, shell or browser (docs/farm.md "Limits"): RLIMIT_AS bounds
// each process's address space, but memory that is not address space escapes it (memfd files
// filled with write(), SysV shared memory, pipe buffers, tmpfs pages). A cgroup's memory limit counts all of
// it, for the sandbox's processes together; past it the kernel's OOM killer ends the sandbox,
// which is reported as terminated "memory". Made under the tool server's own cgroup of cgroup
// v1's memory controller (found by itself), or under a cgroup v2 directory whose memory
// controller was delegated for this (`farm.cgroupParent`; systemd `Delegate=yes` gives one).
// Where neither can be written the sandboxes run on their rlimits alone, as the log says.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const V1_ROOT = '/sys/fs/cgroup/memory';
/** Every sandbox cgroup's name starts so; nothing else of the parent is ever touched. */
const SANDBOX_PREFIX = 'capture-farm-';
/** How long removing a sandbox's cgroup waits for its processes to be reaped. */
const REMOVE_DEADLINE_MS = 10_000;

interface Layout {
  version: 1 | 2;
  /** The tool server's own cgroup directory, under which sandboxes get theirs. */
  parent: string;
}

/** One sandbox's cgroup: the file a process writes its pid to, and what the kernel counted. */
export interface SandboxCgroup {
  procsFile: string;
  /** True once the OOM killer has killed a process of this cgroup. */
  oomKilled(): Promise<boolean>;
  /** Kills what is still in it, then removes it. */
  remove(): Promise<void>;
}

/** This process's cgroup path for cgroup v1's memory controller, from /proc/self/cgroup. */
function ownMemoryPath(): string | undefined {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path !== undefined && (controllers ?? '').split(',').includes('memory')) return path;
  }
  return undefined;
}

function detectLayout(configuredParent: string | undefined): Layout | undefined {
  try {
    if (configuredParent !== undefined) {
      if (existsSync(join(configuredParent, 'cgroup.controllers'))) {
        return { version: 2, parent: configuredParent };
      }
      if (existsSync(join(configuredParent, 'memory.limit_in_bytes'))) {
        return { version: 1, parent: configuredParent };
      }
      return undefined;
    }
    const own = ownMemoryPath();
    if (own !== undefined && existsSync(join(V1_ROOT, own, 'memory.limit_in_bytes'))) {
      return { version: 1, parent: join(V1_ROOT, own) };
    }
  } catch {
    // No /proc or no cgroup file system: no cgroups.
  }
  return undefined;
}

/** Whether a process with this pid exists (signal 0 probes; EPERM means it does). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

export class MemoryCgroups {
  private readonly layout: Layout;

  private constructor(layout: Layout) {
    this.layout = layout;
  }

  /**
   * The cgroups this process may make for its sandboxes (under `configuredParent` when given),
   * or undefined when it may make none.
   */
  static async detect(configuredParent?: string): Promise<MemoryCgroups | undefined> {
    const layout = detectLayout(configuredParent);
    if (!layout) return undefined;
    const cgroups = new MemoryCgroups(layout);
    // Left by a tool server that died mid-run (the pid in the name is gone): removed when empty.
    // Another live tool server's are never touched, even while still empty before a sandbox
    // joins them.
    const leftovers = await readdir(layout.parent).catch(() => [] as string[]);
    for (const name of leftovers) {
      const owner = new RegExp(`^${SANDBOX_PREFIX}[a-z]+-(\\d+)`).exec(name)?.[1];
      if (owner !== undefined && !isAlive(Number(owner))) {
        await rmdir(join(layout.parent, name)).catch(() => undefined);
      }
    }
    // Writable only if one can really be made (root, or a delegated directory).
    try {
      const probe = await cgroups.create(`probe-${process.pid}`, 64 * 1024 * 1024);
      await probe.remove();
      return cgroups;
    } catch {
      return undefined;
    }
  }

  get version(): 1 | 2 {
    return this.layout.version;
  }

  /** A new cgroup holding at most `limitBytes` of memory, swap included (none may be swapped). */
  async create(name: string, limitBytes: number): Promise<SandboxCgroup> {
    const dir = join(this.layout.parent, `${SANDBOX_PREFIX}${name}`);
    await mkdir(dir);
    try {
      if (this.layout.version === 1) {
        await writeFile(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
        // memsw counts memory plus swap; set after the memory limit, which it may not be below.
        const memsw = join(dir, 'memory.memsw.limit_in_bytes');
        if (existsSync(memsw)) await writeFile(memsw, String(limitBytes));
      } else {
        await writeFile(join(dir, 'memory.max'), String(limitBytes));
        const swap = join(dir, 'memory.swap.max');
        if (existsSync(swap)) await writeFile(swap, '0');
      }
    } catch (error) {
      await rmdir(dir).catch(() => undefined);
      throw error;
    }
    const version = this.layout.version;
    return {
      procsFile: join(dir, 'cgroup.procs'),
      async oomKilled() {
        const file = join(dir, version === 1 ? 'memory.oom_control' : 'memory.events');
        const text = await readFile(file, 'utf8').catch(() => '');
        return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0) > 0;
      },
      async remove() {
        // cgroup v2's cgroup.kill (Linux 5.14) kills every process at once, forks in flight
        // included, which a fork bomb's survivors would otherwise win against one pid at a time.
        await writeFile(join(dir, 'cgroup.kill'), '1').catch(() => undefined);
        // Until the directory empties: the slot's uid is free again only once every process of
        // it has gone (RLIMIT_NPROC counts them all, so leftovers would starve the next run). A
        // busy host can take seconds to reap a few hundred processes.
        const deadline = Date.now() + REMOVE_DEADLINE_MS;
        for (;;) {
          const procs = (await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => ''))
            .split('\n')
            .filter(Boolean)
            .map(Number);
          for (const pid of procs) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // Gone already.
            }
          }
          try {
            await rmdir(dir);
            return;
          } catch {
            // Left for the host's own cleanup past the deadline: a run's answer never waits on it.
            if (Date.now() > deadline) return;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      },
    };
  }
}

/**
 * How to start `command` as `uid` (when set; the tool server must then be root) inside `cgroup`
 * when there is one: a shell joins the cgroup and then becomes the command, so nothing the
 * command starts is ever outside it, and drops to the uid itself (setpriv), since joining needs
 * the tool server's rights. Without a cgroup, the spawn switches uid itself.
 */
export function sandboxSpawn(
  command: string[],
  cgroup: SandboxCgroup | undefined,
  uid: number | undefined,
): { file: string; args: string[]; uid?: number; gid?: number } {
  if (!cgroup) {
    return {
      file: command[0] as string,
      args: command.slice(1),
      ...(uid === undefined ? {} : { uid, gid: uid }),
    };
  }
  return {
    file: '/bin/sh',
    args: [
      '-c',
      'echo $$ > "$0" && exec "$@"',
      cgroup.procsFile,
      ...(uid === undefined
        ? []
        : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups']),
      ...command,
    ],
  };
}

const detected = new Map<string, Promise<MemoryCgroups | undefined>>();

/** MemoryCgroups.detect, once per parent for the whole process (it makes and removes a probe). */
export function memoryCgroupsFor(configuredParent: string | undefined) {
  const key = configuredParent ?? '';
  let found = detected.get(key);
  if (!found) {
    found = MemoryCgroups.detect(configuredParent);
    detected.set(key, found);
  }
  return found;
}
