// The stack CLI explains itself (issue 20): --help, -h and help <command> print usage and exit 0;
// a user error prints one line naming it plus the usage and exits 2, never a stack trace.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMAND_HELP } from '../src/cli-usage.ts';

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
