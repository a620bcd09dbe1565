// What every storage route needs: the database pool, the files on disk, the settings, a logger,
// and the scope of the request it serves.
import type { Context } from 'hono';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Caller } from './caller.ts';
import type { ObjectFiles } from './object-files.ts';
import type { RequestScope } from './scoped-transaction.ts';
import type { StorageConfig } from './storage-config.ts';

export interface StorageContext {
  pool: pg.Pool;
  files: ObjectFiles;
  config: StorageConfig;
  logger: Logger;
}

/** The request's scope for its transactions: caller, operation and what PostgREST would set. */
export function scopeOf(c: Context, caller: Caller, operation: string): RequestScope {
  const headers: Record<string, string> = {};
  c.req.raw.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { caller, operation, method: c.req.method, path: new URL(c.req.url).pathname, headers };
}
