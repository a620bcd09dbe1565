// The farm's own store connection, as the tool server's pool provides it (its Database is one):
// the farm's rows (pending actions, the audit, farm devices, owner checks) are written as their
// owner, never as the caller, whose reads go through ActingCaller.asCaller.
import type pg from 'pg';

export interface FarmDatabase {
  query<Row extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<Row[]>;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}
