// The record a running stack keeps in its data dir (`stack.json`), through which `status`,
// `down` and a detached `up` find it. A pid alone is not the stack: after a reboot or a crash the
// kernel hands the number to another process, which `down` would then signal; so the record
// also holds the process's start time, and a pid whose start time differs is not ours.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StatusVariables } from './status-variables.ts';

export interface StackState {
  pid: number;
  /** Start time of `pid` in clock ticks since boot (/proc/<pid>/stat field 22), where known. */
  processStart?: string;
  startedAt: string;
  variables: StatusVariables;
}

export function stateFilePath(dataDir: string): string {
  return join(dataDir, 'stack.json');
}

/** Writes the record whole or not at all (a reader never sees half a file). */
export function writeState(dataDir: string, state: Omit<StackState, 'processStart'>): void {
  const file = stateFilePath(dataDir);
  const record: StackState = { ...state, processStart: processStartTime(state.pid) };
  writeFileSync(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

export function removeState(dataDir: string): void {
  rmSync(stateFilePath(dataDir), { force: true });
}

/** True while a process with this pid exists (signal 0 probes without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * When the process `pid` started, from /proc (Linux); undefined where there is no /proc or no
 * such process. The command name in field 2 may hold spaces and parentheses: fields are counted
 * after its closing parenthesis.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * The state of a stack that is still running, or undefined: no file, a file that is not a
 * record (it is left for the next `up` to replace), a pid that is gone, or a pid now held by
 * another process (its start time differs from the recorded one).
 */
export function readLiveState(dataDir: string): StackState | undefined {
  const file = stateFilePath(dataDir);
  if (!existsSync(file)) return undefined;
  let state: StackState;
  try {
    state = JSON.parse(readFileSync(file, 'utf8')) as StackState;
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(state?.pid) || state.pid <= 0 || !isAlive(state.pid)) return undefined;
  if (state.processStart !== undefined && processStartTime(state.pid) !== state.processStart) {
    return undefined;
  }
  return state;
}

export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isAlive(pid);
}
