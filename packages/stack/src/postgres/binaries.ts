// Locates the PostgreSQL 15 server binaries and the extensions the platform needs, and says
// exactly what to install when something is missing.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StackError } from '../errors.ts';
import { type OsUser, systemUser } from '../system-user.ts';

export const POSTGRES_APT_PACKAGES = [
  'postgresql-15',
  'postgresql-15-cron',
  'postgresql-15-wal2json',
  'postgresql-15-pgtap',
  'postgresql-15-plpgsql-check',
];

const INSTALL_HINT =
  `install them with: sudo apt-get update && sudo apt-get install -y ${POSTGRES_APT_PACKAGES.join(' ')}` +
  ' (or run `npm start`, which does this when run as root)';

export interface PostgresBinaries {
  binDir: string;
  postgres: string;
  initdb: string;
}

export function locatePostgresBinaries(
  binDir = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin',
): PostgresBinaries {
  const binaries = { binDir, postgres: join(binDir, 'postgres'), initdb: join(binDir, 'initdb') };
  if (!existsSync(binaries.postgres) || !existsSync(binaries.initdb)) {
    throw new StackError(
      'missing_dependency',
      `PostgreSQL 15 not found in ${binDir}; ${INSTALL_HINT}`,
    );
  }
  const libDir = join(binDir, '..', 'lib');
  const shareDir = '/usr/share/postgresql/15/extension';
  const missing = [
    ['pg_cron', join(libDir, 'pg_cron.so')],
    ['wal2json', join(libDir, 'wal2json.so')],
    ['pgtap', join(shareDir, 'pgtap.control')],
  ].filter(([, file]) => !existsSync(file as string));
  if (missing.length > 0) {
    const names = missing.map(([name]) => name).join(', ');
    throw new StackError(
      'missing_dependency',
      `PostgreSQL extensions missing: ${names}; ${INSTALL_HINT}`,
    );
  }
  return binaries;
}

/**
 * PostgreSQL refuses to run as root, so a root caller runs it as the `postgres` system user
 * that the Debian package creates.
 */
export function resolveServerUser(): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = systemUser('postgres');
  if (!user) {
    throw new StackError(
      'missing_dependency',
      `running as root but no postgres system user; ${INSTALL_HINT}`,
    );
  }
  return user;
}
