// The record a running stack keeps in its data dir (`stack.json`), through which `status`,
// `down` and a detached `up` find it.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StatusVariables } from './status-variables.ts';

export interface StackState {
  pid: number;
  startedAt: string;
  variables: StatusVariables;
}

export function stateFilePath(dataDir: string): string {
  return join(dataDir, 'stack.json');
}

export function writeState(dataDir: string, state: StackState): void {
  writeFileSync(stateFilePath(dataDir), `${JSON.stringify(state, null, 2)}\n`);
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

/** The state of a stack that is still running, or undefined (a stale file is ignored). */
export function readLiveState(dataDir: string): StackState | undefined {
  const file = stateFilePath(dataDir);
  if (!existsSync(file)) return undefined;
  const state = JSON.parse(readFileSync(file, 'utf8')) as StackState;
  return isAlive(state.pid) ? state : undefined;
}

export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isAlive(pid);
}
