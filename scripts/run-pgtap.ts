// Runs every pgTAP file (supabase/tests for the product schema, packages/stack/test/sql for the
// platform bootstrap) with Debian's pg_prove against a throwaway stack built from this repo.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { REPO_ROOT, startStack } from '../packages/stack/src/index.ts';

const folders = [
  join(REPO_ROOT, 'supabase', 'tests'),
  join(REPO_ROOT, 'packages', 'stack', 'test', 'sql'),
];
const files = folders
  .filter((folder) => existsSync(folder))
  .flatMap((folder) =>
    readdirSync(folder)
      .filter((name) => name.endsWith('.sql'))
      .sort()
      .map((name) => join(folder, name)),
  );

const dataDir = mkdtempSync(join(tmpdir(), 'pgtap-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  logger: pino({ level: 'warn' }),
});
let status = 1;
try {
  // Asynchronous: the stack's services run in this process, and a blocked event loop would leave
  // any transaction they hold open (a proxy's reload) in the way of the tests' locks.
  const child = spawn(
    'pg_prove',
    [
      '--host',
      '127.0.0.1',
      '--port',
      String(stack.ports.db),
      '--username',
      'postgres',
      '--dbname',
      'postgres',
      ...files,
    ],
    { stdio: 'inherit', env: { ...process.env, PGPASSWORD: 'postgres' } },
  );
  status = await new Promise<number>((resolve) => {
    child.once('error', () => resolve(1));
    child.once('close', (code) => resolve(code ?? 1));
  });
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(status);
