// Whether the Postgres server user can reach the data directory (docs/local-stack.md "When it
// cannot start"): when the stack runs as root, Postgres runs as the `postgres` system user, and a
// data directory below a 0700 directory (a home directory, a private temp folder) stops initdb with
// a bare "Permission denied". This finds the directory in the way and says what to do, before
// initdb runs.
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { StackError } from '../errors.ts';
import type { OsUser } from '../system-user.ts';

/** The path itself, then each parent up to `/`, top first. */
function ancestors(path: string): string[] {
  const chain: string[] = [];
  for (let current = path; ; current = dirname(current)) {
    chain.unshift(current);
    if (dirname(current) === current) return chain;
  }
}

/** Asks the kernel as that user (a root process's own checks would always pass). */
function canTraverse(path: string, user: OsUser): boolean {
  return spawnSync('/usr/bin/test', ['-x', path], { uid: user.uid, gid: user.gid }).status === 0;
}

export function assertServerUserReaches(dataDir: string, user: OsUser, userName: string): void {
  const blocked = ancestors(dataDir).find((path) => !canTraverse(path, user));
  if (blocked === undefined) return;
  const stat = statSync(blocked);
  const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
  throw new StackError(
    'data_dir_unreachable',
    `Postgres runs as the system user ${userName} (uid ${user.uid}), which cannot reach the data ` +
      `directory ${dataDir}: ${blocked} is mode ${mode}, owned by uid ${stat.uid}. ` +
      `Choose a data directory it can reach (for example --data-dir /var/tmp/capture-stack), ` +
      `or let it through with: chmod o+x ${blocked}`,
  );
}
