// Which changed rows a subscriber may see, decided by the table's own RLS: the existence check
// on the primary key runs as the subscriber, with role and request.jwt.claims set as PostgREST
// sets them (Realtime's apply_rls). One query per identity and table covers a whole batch.
import type { Pool } from 'pg';
import { quoteIdent, type TableRef } from './catalog.ts';
import type { ChangeColumn } from './wal-stream.ts';

export interface Identity {
  role: string;
  claims: Record<string, unknown>;
}

/**
 * Indexes into `keys` of the rows `identity` can select from `table` right now.
 * `keys[i]` holds the primary-key values (as text) in `primaryKey` order.
 */
export async function visibleRows(
  pool: Pool,
  identity: Identity,
  table: TableRef,
  primaryKey: ChangeColumn[],
  keys: string[][],
): Promise<Set<number>> {
  if (keys.length === 0 || primaryKey.length === 0) return new Set();
  const unnestArgs = primaryKey.map((_, index) => `$${index + 1}::text[]`).join(', ');
  const aliases = primaryKey.map((_, index) => `k${index}`);
  const conditions = primaryKey
    .map((column, index) => `t.${quoteIdent(column.name)} = u.${aliases[index]}::${column.sqlType}`)
    .join(' and ');
  const sql = `select u.ord::int as ord
    from unnest(${unnestArgs}) with ordinality as u (${aliases.join(', ')}, ord)
    where exists (select 1 from ${quoteIdent(table.schema)}.${quoteIdent(table.table)} t
                  where ${conditions})`;
  const columns = primaryKey.map((_, index) => keys.map((key) => key[index] ?? null));
  const client = await pool.connect();
  try {
    await client.query('begin read only');
    await client.query(
      `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true),
              set_config('statement_timeout', '5s', true)`,
      [identity.role, JSON.stringify(identity.claims)],
    );
    const { rows } = await client.query<{ ord: number }>(sql, columns);
    await client.query('commit');
    return new Set(rows.map((row) => row.ord - 1));
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
