// A first run that explains itself: on a terminal (a real pseudo-terminal, through
// util-linux `script`) `up` shows the banner and one human line per notable event, no JSON;
// `logs` shows each service's file; and the failures a new user meets say why and what to do, on
// screen, with --detach too: a data directory Postgres cannot reach, a configured port another
// process holds, a Node older than the pinned one.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readLiveState } from '../src/state-file.ts';

const BIN = fileURLToPath(new URL('../bin/stack.mjs', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'stack-first-run-'));
// mkdtemp makes it 0700; Postgres (another user when we are root) must reach data dirs in it.
chmodSync(scratch, 0o755);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function stack(args: string[], timeout = 60_000) {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Output so far of a process, and a wait for some text in it. */
function watch(child: ChildProcess) {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return {
    text: () => output,
    async until(pattern: RegExp, timeoutMs: number) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(output)) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`waited for ${pattern}; got:\n${output}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
  };
}

describe('on a terminal', () => {
  const dataDir = join(scratch, 'terminal');

  it('shows the banner and notable events as human lines, never JSON; logs shows the files', async () => {
    // `script` gives the command a pseudo-terminal, as a person's shell does.
    const command = `${process.execPath} ${BIN} up --free-ports --data-dir ${dataDir}`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'info' },
    });
    const run = watch(child);
    try {
      await run.until(/Press Ctrl-C to stop\./, 180_000);
      expect(run.text()).toMatch(/postgres: started on 127\.0\.0\.1:\d+/);
      expect(run.text()).toMatch(/migrations: (applied \d+ migrations|up to date)/);
      expect(run.text()).toMatch(/tool-server: started at http/);
      expect(run.text()).toContain('Demo logins:');
      const pid = readLiveState(dataDir)?.pid;
      expect(pid).toBeGreaterThan(0);
      process.kill(pid as number, 'SIGTERM');
      await run.until(/postgres: stopped/, 60_000);
    } finally {
      child.kill('SIGKILL');
    }
    for (const line of run.text().split(/\r?\n/)) expect(line).not.toMatch(/^\s*\{"level"/);
    // Routine lines (every PostgREST request, every cron run) stay in the files.
    expect(run.text()).not.toMatch(/cron job \d+ COMMAND completed/);

    const all = stack(['logs', '--data-dir', dataDir]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/migrations: seed\.sql applied/);
    expect(all.stdout).not.toMatch(/^\{"level"/m);
    const one = stack(['logs', 'postgres', '--data-dir', dataDir]);
    expect(one.code).toBe(0);
    expect(
      one.stdout
        .trim()
        .split('\n')
        .every((line) => line.includes('postgres: ')),
    ).toBe(true);
    const none = stack(['logs', 'no-such-service', '--data-dir', dataDir]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no service no-such-service; services with logs: .*postgres/);
  }, 300_000);
});

describe('failures that say why', () => {
  it.skipIf(process.getuid?.() !== 0).each([[[]], [['--detach']]])(
    'names a data directory Postgres cannot reach, the user it runs as, and the fix (flags %j)',
    (flags) => {
      const privateDir = join(scratch, `private-${flags.length}`);
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const result = stack([
        'up',
        ...flags,
        '--free-ports',
        '--data-dir',
        join(privateDir, 'data'),
      ]);
      expect(result.code).toBe(1);
      const [line, ...rest] = result.stderr.trim().split('\n');
      expect(rest).toEqual([]);
      expect(line).toContain(`cannot reach the data directory ${join(privateDir, 'data')}`);
      expect(line).toContain('system user postgres');
      expect(line).toContain(`${privateDir} is mode 0700`);
      expect(line).toContain(`chmod o+x ${privateDir}`);
      expect(result.stderr).not.toMatch(/\bat .*\.ts:\d+/);
    },
    120_000,
  );

  describe('a configured port another process holds', () => {
    let holder: Server | undefined;
    /** Who the error must name: this test when it could take the port, else whoever has it. */
    let expectedHolder: RegExp | undefined;
    afterAll(() => holder?.close());

    /** Holds 54321; the machine may already run a stack (or anything) there, which serves too. */
    async function holdApiPort(): Promise<RegExp> {
      holder = createServer();
      const taken = await new Promise<boolean>((resolve, reject) => {
        holder?.once('error', (error: NodeJS.ErrnoException) =>
          error.code === 'EADDRINUSE' ? resolve(false) : reject(error),
        );
        holder?.listen(54321, '127.0.0.1', () => resolve(true));
      });
      if (taken) return new RegExp(`is taken by pid ${process.pid} \\(`);
      holder = undefined;
      return /is taken by (pid \d+ \(|another process)/;
    }

    it.each([[[]], [['--detach']]])(
      'is named with its holder and --free-ports suggested, on screen (flags %j)',
      async (flags) => {
        expectedHolder ??= await holdApiPort();
        const dataDir = join(scratch, `port-${flags.length}`);
        const result = stack(['up', ...flags, '--data-dir', dataDir]);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(
          'port 54321, which the API gateway is configured to use, is taken by',
        );
        expect(result.stderr).toMatch(expectedHolder);
        expect(result.stderr).toContain('--free-ports');
        expect(result.stderr).not.toMatch(/\bat .*\.ts:\d+/);
        expect(existsSync(join(dataDir, 'pg', 'PG_VERSION'))).toBe(false);
      },
      120_000,
    );
  });

  const systemNode = '/usr/bin/node';
  const systemMajor = existsSync(systemNode)
    ? Number(spawnSync(systemNode, ['-p', 'process.versions.node.split(".")[0]']).stdout)
    : 24;
  it.skipIf(systemMajor >= 24)('tells an older Node what to do instead of a loader error', () => {
    const result = spawnSync(systemNode, [BIN, 'status'], { encoding: 'utf8' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^stack: Node 24 or newer is needed and this is Node \d+/);
    expect(result.stderr).toContain('npm start');
    expect(result.stderr).not.toContain('ERR_');
  });
});
