// curl as a child process (never spawnSync: the proxy under test runs in this process).
import { execFile } from 'node:child_process';

export interface CurlResult {
  /** curl's exit code: 0 on success, 60 for an untrusted certificate, 35 for a TLS failure. */
  code: number;
  stdout: string;
  stderr: string;
}

export function curl(args: string[]): Promise<CurlResult> {
  return new Promise((resolve) => {
    execFile(
      'curl',
      ['--silent', '--show-error', '--max-time', '20', ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? Number((error as NodeJS.ErrnoException & { code?: unknown }).code) : 0;
        resolve({ code: Number.isNaN(code) ? -1 : code, stdout, stderr });
      },
    );
  });
}
