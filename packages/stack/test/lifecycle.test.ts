// The stack as a whole: CLI up --detach / status / down from an empty data dir leaves nothing
// running; the database checks (advisors, lint) pass on a clean schema and catch a bad one.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runDatabaseChecks } from '../src/index.ts';
import { isPortOpen } from '../src/ports.ts';
import { isAlive } from '../src/state-file.ts';
import { FIXTURE_PROJECT, startFixtureStack } from './helpers/fixture-stack.ts';

const run = promisify(execFile);
const cli = join(REPO_ROOT, 'packages', 'stack', 'src', 'cli.ts');
const dataDir = mkdtempSync(join(tmpdir(), 'stack-cli-'));

afterAll(async () => {
  await run(process.execPath, [cli, 'down', '--data-dir', dataDir]).catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

async function childPids(parent: number): Promise<number[]> {
  const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(parent)]);
  return stdout
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0);
}

describe('stack lifecycle through the CLI', () => {
  it('starts detached from an empty data dir, reports status, and stops leaving no process', async () => {
    const up = await run(
      process.execPath,
      [cli, 'up', '--detach', '--free-ports', '--data-dir', dataDir],
      {
        timeout: 120_000,
      },
    );
    expect(up.stdout).toContain('Local stack is running.');
    expect(up.stdout).toContain('admin@demo.local');

    const { stdout } = await run(process.execPath, [
      cli,
      'status',
      '-o',
      'json',
      '--data-dir',
      dataDir,
    ]);
    const status = JSON.parse(stdout);
    for (const name of [
      'API_URL',
      'DB_URL',
      'ANON_KEY',
      'SERVICE_ROLE_KEY',
      'JWT_SECRET',
      'PUBLISHABLE_KEY',
      'SECRET_KEY',
    ]) {
      expect(status[name]).toBeTruthy();
    }
    const env = await run(process.execPath, [cli, 'status', '-o', 'env', '--data-dir', dataDir]);
    expect(env.stdout).toContain(`API_URL="${status.API_URL}"`);

    // The demo seed was applied to the new database, and the demo admin can sign in.
    const signIn = await fetch(`${status.API_URL}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: status.PUBLISHABLE_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@demo.local', password: 'demo-admin-pass' }),
    });
    expect(signIn.status).toBe(200);

    const state = JSON.parse((await run('cat', [join(dataDir, 'stack.json')])).stdout);
    const children = await childPids(state.pid);
    expect(children.length).toBeGreaterThanOrEqual(2);
    const apiPort = Number(new URL(status.API_URL).port);
    const dbPort = Number(new URL(status.DB_URL).port);

    const down = await run(process.execPath, [cli, 'down', '--data-dir', dataDir], {
      timeout: 60_000,
    });
    expect(down.stdout).toContain('Stopped.');
    expect(isAlive(state.pid)).toBe(false);
    for (const pid of children) expect(isAlive(pid)).toBe(false);
    expect(await isPortOpen(apiPort)).toBe(false);
    expect(await isPortOpen(dbPort)).toBe(false);
    await expect(
      run(process.execPath, [cli, 'status', '--data-dir', dataDir]),
    ).rejects.toMatchObject({ code: 3 });
    // The test's own limit covers its commands' limits (up 120 s, down 60 s) with room to spare.
  }, 240_000);
});

describe('database checks', () => {
  it('passes advisors and lint on the fixture schema, then flags a table without RLS', async () => {
    const fixture = await startFixtureStack();
    try {
      const clean = await runDatabaseChecks(FIXTURE_PROJECT, fixture.stack.dbUrl);
      expect(clean.securityFindings).toEqual([]);
      expect(clean.lintErrors).toEqual([]);
      expect(clean.passed).toBe(true);

      const client = new pg.Client({ connectionString: fixture.stack.dbUrl });
      await client.connect();
      await client.query('create table public.unprotected (id int primary key)');
      await client.end();
      const dirty = await runDatabaseChecks(FIXTURE_PROJECT, fixture.stack.dbUrl);
      expect(dirty.passed).toBe(false);
      expect(dirty.securityFindings.map((finding) => finding.name)).toContain(
        'rls_disabled_in_public',
      );
    } finally {
      await fixture.dispose();
    }
    // It starts a whole stack, which a busy machine can take minutes over (the hook limit).
  }, 180_000);
});
