// One PostgreSQL 15 cluster in a data directory of its own: initdb on first use, then the
// server as a managed child process with the settings the platform depends on.

import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { StackError } from '../errors.ts';
import { ManagedProcess } from '../managed-process.ts';
import { waitUntil } from '../ports.ts';
import { locatePostgresBinaries, resolveServerUser } from './binaries.ts';
import { assertServerUserReaches } from './data-dir-access.ts';

/** The superuser password of the local stack, as the Supabase CLI's (`postgres`). */
export const POSTGRES_PASSWORD = 'postgres';

export interface ClusterOptions {
  dataDir: string;
  port: number;
  logger: Logger;
  /** Trade durability for speed (fsync off): for throwaway test stacks only. */
  ephemeral?: boolean;
}

export interface RunningCluster {
  port: number;
  /** Superuser URL, the `DB_URL` of `supabase status`. */
  url: string;
  /** True when initdb ran in this start: the database is new and wants its seed. */
  created: boolean;
  stop(): Promise<void>;
}

export function superuserUrl(port: number, database = 'postgres'): string {
  return `postgresql://postgres:${POSTGRES_PASSWORD}@127.0.0.1:${port}/${database}`;
}

function serverSettings(options: ClusterOptions): string[] {
  const settings: Record<string, string> = {
    port: String(options.port),
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    // pg_cron must be preloaded; background workers avoid libpq logins from inside the server.
    shared_preload_libraries: 'pg_cron',
    'cron.database_name': 'postgres',
    'cron.use_background_workers': 'on',
    max_worker_processes: '16',
    // Logical decoding for the realtime service's wal2json slot.
    wal_level: 'logical',
    max_replication_slots: '10',
    max_wal_senders: '10',
    log_min_messages: 'warning',
    log_line_prefix: '%m [%p] ',
  };
  if (options.ephemeral) {
    // Not synchronous_commit=off: logical decoding reads only flushed WAL, so Realtime would
    // wait for the WAL writer (200 ms). With fsync off a synchronous commit costs next to nothing.
    Object.assign(settings, { fsync: 'off', full_page_writes: 'off' });
  }
  return Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

function initializeCluster(pgDir: string, options: ClusterOptions): void {
  const binaries = locatePostgresBinaries();
  const user = resolveServerUser();
  mkdirSync(pgDir, { recursive: true, mode: 0o700 });
  // The parent must be traversable by the server user when a root caller made it.
  chmodSync(options.dataDir, 0o755);
  if (user) assertServerUserReaches(options.dataDir, user, 'postgres');
  const passwordFile = join(options.dataDir, '.pwfile');
  writeFileSync(passwordFile, `${POSTGRES_PASSWORD}\n`, { mode: 0o644 });
  if (user) chownSync(pgDir, user.uid, user.gid);
  const result = spawnSync(
    binaries.initdb,
    [
      '-D',
      pgDir,
      '-U',
      'postgres',
      `--pwfile=${passwordFile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ],
    { encoding: 'utf8', uid: user?.uid, gid: user?.gid },
  );
  rmSync(passwordFile, { force: true });
  if (result.status !== 0) {
    rmSync(pgDir, { recursive: true, force: true });
    throw new StackError('process_exited', `initdb failed:\n${result.stderr || result.error}`);
  }
}

async function acceptsConnections(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function startCluster(options: ClusterOptions): Promise<RunningCluster> {
  const binaries = locatePostgresBinaries();
  const user = resolveServerUser();
  const pgDir = join(options.dataDir, 'pg');
  const created = !existsSync(join(pgDir, 'PG_VERSION'));
  if (created) initializeCluster(pgDir, options);
  // Again on every start: a data dir moved, or a parent made private since, would otherwise stop
  // the server with a bare "Permission denied" in its log.
  else if (user) assertServerUserReaches(options.dataDir, user, 'postgres');
  const server = new ManagedProcess({
    name: 'postgres',
    command: binaries.postgres,
    args: ['-D', pgDir, ...serverSettings(options)],
    uid: user?.uid,
    gid: user?.gid,
    logger: options.logger,
    stopSignal: 'SIGINT',
  });
  const url = superuserUrl(options.port);
  await server.whileRunning(waitUntil('postgres', () => acceptsConnections(url)));
  return { port: options.port, url, created, stop: () => server.stop() };
}
