// Every database step of a request runs in a transaction as its caller, as storage-api runs it
// (src/internal/database/postgres/scope.ts): `role` and the `request.jwt.*` settings PostgREST
// sets, local to the transaction, so RLS on storage.objects/buckets decides and auth.uid() reads
// the caller. The service's login (supabase_storage_admin) is a member of anon, authenticated and
// service_role, so one transaction may switch between the caller and service_role, which
// bypasses RLS, for the lookups the API makes on its own account.
import type pg from 'pg';
import { type Caller, SERVICE_CALLER } from './caller.ts';
import { fromDatabaseError, storageErrors } from './storage-error.ts';

export interface RequestScope {
  caller: Caller;
  /** storage.operation(), e.g. `storage.object.upload` (storage-api's route operation names). */
  operation: string;
  method: string;
  path: string;
  headers: Record<string, string>;
}

export class ScopedTransaction {
  private readonly client: pg.PoolClient;
  private readonly scope: RequestScope;

  constructor(client: pg.PoolClient, scope: RequestScope) {
    this.client = client;
    this.scope = scope;
  }

  async query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<Row>> {
    return this.client.query<Row>(text, values);
  }

  /** Acts as the request's caller from here on (RLS applies). */
  async actAsCaller(): Promise<void> {
    await this.client.query(`select set_config('role', $1, true)`, [this.scope.caller.role]);
  }

  /** Acts as service_role from here on (RLS bypassed), still with the caller's claims set. */
  async actAsService(): Promise<void> {
    await this.client.query(`select set_config('role', 'service_role', true)`);
  }

  /** Serialises writers of one object key until the transaction ends. */
  async lockKey(bucketId: string, name: string): Promise<void> {
    await this.client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [
      `${bucketId}/${name}`,
    ]);
  }
}

const SCOPE_SETTINGS = `select
  set_config('role', $1, true),
  set_config('request.jwt.claim.role', $1, true),
  set_config('request.jwt', $2, true),
  set_config('request.jwt.claim.sub', $3, true),
  set_config('request.jwt.claims', $4, true),
  set_config('request.headers', $5, true),
  set_config('request.method', $6, true),
  set_config('request.path', $7, true),
  set_config('storage.operation', $8, true),
  set_config('storage.allow_delete_query', 'true', true)`;

/** Marks a transaction that was only a probe, to be rolled back. */
const PROBE_DONE = Symbol('probe done');

async function run<T>(
  pool: pg.Pool,
  scope: RequestScope,
  work: (tx: ScopedTransaction) => Promise<T>,
  rollback: boolean,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('begin');
    const { caller } = scope;
    await client
      .query(SCOPE_SETTINGS, [
        caller.role,
        caller.jwt,
        caller.subject ?? '',
        JSON.stringify(caller.claims),
        JSON.stringify(scope.headers),
        scope.method,
        scope.path,
        scope.operation,
      ])
      .catch((error: unknown) => {
        // A role that does not exist, or one the service may not become (any but the API roles).
        throw storageErrors.accessDenied('Access denied: Invalid role', error);
      });
    const result = await work(new ScopedTransaction(client, scope));
    if (rollback) throw PROBE_DONE;
    await client.query('commit');
    return result;
  } catch (error) {
    try {
      await client.query('rollback');
    } catch {
      broken = true;
    }
    if (error === PROBE_DONE) return undefined as T;
    throw fromDatabaseError(error);
  } finally {
    client.release(broken);
  }
}

/** Runs `work` in one transaction as the scope's caller and commits it. */
export function inTransaction<T>(
  pool: pg.Pool,
  scope: RequestScope,
  work: (tx: ScopedTransaction) => Promise<T>,
): Promise<T> {
  return run(pool, scope, work, false);
}

/**
 * Runs `work` as the caller and rolls it back: whether the caller's policies admit a write
 * (storage-api's testPermission), before any file is received.
 */
export async function probeInTransaction(
  pool: pg.Pool,
  scope: RequestScope,
  work: (tx: ScopedTransaction) => Promise<void>,
): Promise<void> {
  await run(pool, scope, work, true);
}

/** The same scope on the service's own account. */
export function serviceScope(scope: RequestScope): RequestScope {
  return { ...scope, caller: SERVICE_CALLER };
}
