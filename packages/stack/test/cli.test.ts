// The stack CLI explains itself (docs/local-stack.md "CLI"): --help, -h and help <command> print
// usage and exit 0; a user error prints one line naming it plus the usage and exits 2, never a
// stack trace; a stale or broken stack.json is never taken for a running stack.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMAND_HELP } from '../src/cli-usage.ts';
import { processStartTime, readLiveState, writeState } from '../src/state-file.ts';

const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'stack-cli-test-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function stack(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args, '--data-dir', dataDir], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('help', () => {
  it.each([['--help'], ['-h'], ['help']])('%s lists every command and exits 0', (flag) => {
    const result = stack(flag);
    expect(result.code).toBe(0);
    for (const name of Object.keys(COMMAND_HELP))
      expect(result.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });

  it.each(Object.keys(COMMAND_HELP).filter((name) => name !== 'help'))(
    'help %s shows its usage and an example',
    (name) => {
      for (const args of [
        ['help', name],
        [name, '--help'],
      ]) {
        const result = stack(...args);
        expect(result.code).toBe(0);
        expect(result.stdout).toContain(`Usage: npm run stack -- ${name}`);
        expect(result.stdout).toMatch(/^Example: /m);
      }
    },
  );
});

describe('user errors', () => {
  it.each([
    [['--bogus'], /Unknown option '--bogus'/],
    [['frobnicate'], /unknown command frobnicate/],
    [['status', '-o', 'xml'], /--output must be pretty, json or env, not xml/],
    [['status', 'extra'], /status takes no argument extra/],
    [['help', 'nope'], /no command nope/],
    [['mail', '--to'], /argument missing|requires|--to/],
  ])('%j prints one line naming the mistake, the usage, and exits 2', (args, message) => {
    const result = stack(...args);
    expect(result.code).toBe(2);
    const [first, blank, usage] = result.stderr.split('\n');
    expect(first).toMatch(/^stack: /);
    expect(first).toMatch(message);
    expect(blank).toBe('');
    expect(usage).toMatch(/^Usage: npm run stack -- /);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });

  it('answers status without a running stack in one line, exit 3', () => {
    const result = stack('status');
    expect(result.code).toBe(3);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/no stack is running/);
  });
});

describe('a stack.json left behind', () => {
  const stateFile = join(dataDir, 'stack.json');
  afterAll(() => rmSync(stateFile, { force: true }));

  it('never signals a process that took over its pid: down says not running, the process lives', async () => {
    // Any live process stands in for the one the kernel gave the old stack's pid after a crash.
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const pid = bystander.pid as number;
      const started = processStartTime(pid);
      expect(started).toMatch(/^\d+$/);
      writeFileSync(
        stateFile,
        JSON.stringify({
          pid,
          processStart: '1',
          startedAt: '2026-01-01T00:00:00Z',
          variables: {},
        }),
      );
      const result = stack('down');
      expect(result.code).toBe(0);
      expect(result.stdout.trim()).toBe('Not running.');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
      expect(processStartTime(pid)).toBe(started);
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it('answers status and down as not running for a file that is not a record', () => {
    writeFileSync(stateFile, '{"pid": 12');
    expect(stack('status')).toMatchObject({
      code: 3,
      stderr: expect.stringMatching(/no stack is running/),
    });
    expect(stack('down')).toMatchObject({ code: 0, stdout: 'Not running.\n' });
  });

  it('still finds a live stack by its own record', () => {
    writeState(dataDir, {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      variables: {} as never,
    });
    expect(readLiveState(dataDir)?.pid).toBe(process.pid);
    expect(readLiveState(dataDir)?.processStart).toBe(processStartTime(process.pid));
  });
});
