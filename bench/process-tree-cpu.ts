// CPU time of the processes a benchmark started (its descendants), by command name, from Linux
// /proc: what one request costs each part, a figure a busy shared machine disturbs far less than
// requests per second.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU milliseconds used so far by `root` and all its descendants (a daemon and its workers). */
export function processTreeCpuMs(root: number): number {
  const own = readProcesses().usage.get(root)?.ticks ?? 0;
  let total = (own * 1000) / USER_HZ;
  for (const ms of descendantCpuMs(root).values()) total += ms;
  return total;
}

/** CPU milliseconds used so far by each descendant of `root`, summed by command name. */
export function descendantCpuMs(root = process.pid): Map<string, number> {
  const { parents, usage } = readProcesses();
  const byCommand = new Map<string, number>();
  for (const [pid, { command, ticks }] of usage) {
    let ancestor = parents.get(pid);
    while (ancestor !== undefined && ancestor > 1 && ancestor !== root) {
      ancestor = parents.get(ancestor);
    }
    if (ancestor !== root) continue;
    byCommand.set(command, (byCommand.get(command) ?? 0) + (ticks * 1000) / USER_HZ);
  }
  return byCommand;
}

/** What each command used between two readings, in ms. */
export function cpuMsBetween(
  before: Map<string, number>,
  after: Map<string, number>,
): Map<string, number> {
  const used = new Map<string, number>();
  for (const [command, ms] of after) used.set(command, ms - (before.get(command) ?? 0));
  return used;
}

/** Every process's parent and CPU ticks so far, from /proc. */
function readProcesses() {
  const parents = new Map<number, number>();
  const usage = new Map<number, { command: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // the process ended in between
    }
    const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    // After the command: state, ppid, …; utime and stime are fields 14 and 15 of stat.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry);
    parents.set(pid, Number(fields[1]));
    usage.set(pid, { command, ticks: Number(fields[11]) + Number(fields[12]) });
  }
  return { parents, usage };
}
