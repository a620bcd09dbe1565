// Brings a running cluster to the project's schema: the stack-owned platform bootstrap, then the
// project's migrations through the Supabase CLI (so they are recorded as hosted Supabase records
// them), then seed.sql on a database that was created in this start.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from 'pino';
import { StackError } from '../errors.ts';
import { notable } from '../logging/stack-logger.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The platform bootstrap, in order: roles, auth and realtime; then the storage schema. */
const BOOTSTRAP_FILES = [
  join(HERE, 'bootstrap.sql'),
  // realtime.messages, realtime.send() and broadcast_changes() (docs/realtime.md).
  join(HERE, 'realtime-bootstrap.sql'),
  join(HERE, 'bootstrap-storage.sql'),
];

export async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function applyPlatformBootstrap(url: string): Promise<void> {
  for (const file of BOOTSTRAP_FILES) await runSql(url, readFileSync(file, 'utf8'));
}

/** Path of the Supabase CLI binary from the pinned npm package. */
export function supabaseCliPath(): string {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('supabase/package.json'));
  return join(packageDir, '..', '.bin', 'supabase');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the Supabase CLI against a database URL, never prompting and never phoning home. */
export async function runSupabaseCli(projectDir: string, args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(supabaseCliPath(), [...args, '--workdir', projectDir, '--yes'], {
      env: { ...process.env, SUPABASE_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1', CI: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function hasMigrations(projectDir: string): boolean {
  const dir = join(projectDir, 'supabase', 'migrations');
  return existsSync(dir) && readdirSync(dir).some((name) => name.endsWith('.sql'));
}

export async function applyMigrations(
  projectDir: string,
  url: string,
  logger: Logger,
): Promise<void> {
  if (!hasMigrations(projectDir)) return;
  const result = await runSupabaseCli(projectDir, ['migration', 'up', `--remote=${url}`]);
  if (result.code !== 0) {
    throw new StackError(
      'migration_failed',
      `supabase migration up failed (exit ${result.code}):\n${result.stderr}${result.stdout}`,
    );
  }
  logger.info({ component: 'migrations' }, result.stdout.trim() || 'migrations up to date');
  const applied = `${result.stdout}${result.stderr}`.match(/^Applying migration /gm)?.length ?? 0;
  logger.info(
    notable('migrations'),
    applied > 0 ? `applied ${applied} migration${applied === 1 ? '' : 's'}` : 'up to date',
  );
}

export async function applySeed(projectDir: string, url: string, logger: Logger): Promise<void> {
  const seedFile = join(projectDir, 'supabase', 'seed.sql');
  if (!existsSync(seedFile)) return;
  try {
    await runSql(url, readFileSync(seedFile, 'utf8'));
  } catch (error) {
    throw new StackError('migration_failed', `supabase/seed.sql failed: ${String(error)}`, {
      cause: error,
    });
  }
  logger.info(notable('migrations'), 'seed.sql applied');
}
