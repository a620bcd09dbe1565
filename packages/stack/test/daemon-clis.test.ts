// The daemons' CLIs (capture proxy, status service, tool server) explain themselves too (issue
// 20): --help lists their environment variables and exits 0; a stray argument or a missing or bad
// variable prints one line naming it plus the usage and exits 2, never a stack trace.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

const DAEMONS = [
  { name: 'capture-proxy', cli: root('proxy/src/cli.ts'), required: 'PROXY_DB_URL' },
  { name: 'capture-status', cli: root('packages/status/src/cli.ts'), required: 'STATUS_DB_URL' },
  {
    name: 'capture-tool-server',
    cli: root('packages/tool-server/src/cli.ts'),
    required: 'TOOL_SERVER_ORIGINS',
  },
];

/** Runs a CLI with none of the daemons' settings in its environment. */
function run(cli: string, args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(PROXY|STATUS|TOOL_SERVER)_/.test(name)),
  );
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: { ...clean, ...env },
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.each(DAEMONS)('$name', ({ name, cli, required }) => {
  it('answers --help with its variables and exit 0', () => {
    for (const flag of ['--help', '-h']) {
      const result = run(cli, [flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^Usage: node /);
      expect(result.stdout).toContain(required);
      expect(result.stdout).toMatch(/^Example: /m);
    }
  });

  it('refuses a stray argument in one line with the usage, exit 2', () => {
    const result = run(cli, ['--bogus']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(new RegExp(`^${name}: unknown argument --bogus`));
    expect(result.stderr).toContain('Usage: node ');
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });

  it('names a missing setting in one line with the usage, exit 2', () => {
    const result = run(cli, []);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(new RegExp(`^${name}: .*${required}`));
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});
