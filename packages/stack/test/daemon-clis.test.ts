// The daemons' CLIs (capture proxy, status service, tool server) explain themselves too, as the
// stack's does (docs/local-stack.md "CLI"): --help (and `help`) lists their environment variables
// and exits 0; a stray argument or a missing or bad variable prints one line naming it plus the
// usage and exits 2; a fault at start is one line and exit 1; never a stack trace on stderr. And a
// daemon started runs until stopped.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
function cleanEnvironment(env: Record<string, string>) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(PROXY|STATUS|TOOL_SERVER)_/.test(name)),
  );
  return { ...clean, ...env };
}

function run(cli: string, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    env: cleanEnvironment(env),
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.each(DAEMONS)('$name', ({ name, cli, required }) => {
  it('answers --help with its variables and exit 0', () => {
    for (const flag of ['--help', '-h', 'help']) {
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

/** Nothing listens on port 1 of loopback: a database that refuses at once. */
const NO_DATABASE = 'postgresql://postgres:postgres@127.0.0.1:1/postgres';
const PROXY_CLI = root('proxy/src/cli.ts');

describe('capture-proxy settings it builds from and faults at start', () => {
  it.each([
    ['PROXY_ALLOWLIST', '10.0.0.0/99'],
    ['PROXY_DESTINATIONS', 'public,192.0.2.0/77'],
    ['PROXY_UPSTREAM_CA_FILE', '/no/such/ca.pem'],
    ['PROXY_WORKERS', '0'],
  ])('names a bad %s in one line with the usage, exit 2', (name, value) => {
    const result = run(PROXY_CLI, [], { PROXY_DB_URL: NO_DATABASE, [name]: value });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(new RegExp(`^capture-proxy: ${name}: `));
    expect(result.stderr).toContain('Usage: node ');
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });

  it('says in one line that it cannot start without its database, exit 1', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'proxy-cli-'));
    try {
      const result = run(PROXY_CLI, [], {
        PROXY_DB_URL: NO_DATABASE,
        PROXY_DATA_DIR: dataDir,
        PROXY_PORT: '0',
        PROXY_MANAGEMENT_PORT: '0',
      });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^capture-proxy: cannot start: .*ECONNREFUSED.*\(details in the log\)$/,
        ),
      ]);
      // The detail is in the JSON log on stdout, for whoever collects it.
      expect(result.stdout).toMatch(/"msg":"cannot start"/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('capture-tool-server settings', () => {
  it('names a listen entry that is not host:port, exit 2', () => {
    const result = run(root('packages/tool-server/src/cli.ts'), [], {
      TOOL_SERVER_ORIGINS: 'http://127.0.0.1:1',
      TOOL_SERVER_LISTEN: '127.0.0.1',
      TOOL_SERVER_DASHBOARD_URL: 'http://127.0.0.1:2',
      TOOL_SERVER_DB_URL: NO_DATABASE,
      TOOL_SERVER_SUPABASE_URL: 'http://127.0.0.1:3',
      TOOL_SERVER_JWT_SECRET: 'super-secret-jwt-token-with-at-least-32-characters-long',
    });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(
      /^capture-tool-server: TOOL_SERVER_LISTEN: each entry is host:port/,
    );
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('capture-status as a daemon', () => {
  it('keeps running (retrying its writes) until SIGTERM, then exits 0', async () => {
    const child = spawn(process.execPath, [root('packages/status/src/cli.ts')], {
      env: cleanEnvironment({
        STATUS_DB_URL: NO_DATABASE,
        STATUS_API_URL: 'http://127.0.0.1:1',
        STATUS_ANON_KEY: 'anon',
        STATUS_INTERVAL_MS: '1000',
      }),
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // Its only timer used to be unref-ed: the process exited 0 at once, doing nothing.
    const early = await Promise.race([
      exited.then(() => 'exited'),
      new Promise((resolve) => setTimeout(() => resolve('running'), 2500)),
    ]);
    expect(early).toBe('running');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 20_000);
});
