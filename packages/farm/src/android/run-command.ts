// Runs one farm host binary (adb, aapt) with an argument array (no shell, so nothing in a package
// name, URL or serial is ever interpreted), a wall-time limit (SIGKILL, the process and its
// children's pipes then close) and capped output.
import { spawn } from 'node:child_process';

export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface CommandOptions {
  timeoutMs: number;
  /** Per stream; more is dropped (the tools only read status lines and package lists). */
  maxOutputBytes?: number;
  env?: NodeJS.ProcessEnv;
  /** Aborting kills the process (SIGKILL) and rejects with an AbortError: server shutdown. */
  signal?: AbortSignal;
  /** Run as this uid and gid (the tool server is root): a sandboxed aapt's own. */
  uid?: number;
}

export function runCommand(
  file: string,
  args: readonly string[],
  options: CommandOptions,
): Promise<CommandResult> {
  const cap = options.maxOutputBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Only what the tools need: never the tool server's secrets (database URL, keys).
      env: options.env ?? { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
      signal: options.signal,
      killSignal: 'SIGKILL',
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
    });
    const collect = (stream: NodeJS.ReadableStream) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (size >= cap) return;
        chunks.push(chunk.subarray(0, cap - size));
        size += chunk.length;
      });
      return () => Buffer.concat(chunks).toString('utf8');
    };
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, stdout: stdout(), stderr: stderr(), timedOut });
    });
  });
}
