// Which changed rows each subscriber may see, decided by the table's own RLS: the existence check
// on the primary key runs as the subscriber, with role and request.jwt.claims set as PostgREST
// sets them. As Supabase Realtime's apply_rls, one statement answers for many identities: the
// check is prepared once and run per identity in a loop inside the database, so a change costs
// one round trip instead of one transaction per identity (docs/realtime.md "Benchmark": p95 at
// 500 subscribers went from 497 ms to under 100 ms).
import type { Pool, PoolClient } from 'pg';
import { quoteIdent, type TableRef } from './catalog.ts';
import type { ChangeColumn } from './change.ts';

export interface Identity {
  role: string;
  claims: Record<string, unknown>;
}

/** Which of these keys of `table` may each identity select? */
export interface VisibilityCheck {
  table: TableRef;
  primaryKey: ChangeColumn[];
  /** Primary-key values as text, in primaryKey order. */
  keys: string[][];
}

/**
 * Runs `check_sql` once per identity. Each run sits in its own subtransaction that is always
 * rolled back (the RTVIS raise), so whatever one identity's policies set (role, claims, a GUC a
 * policy caches a value in) is undone before the next identity runs, as if each had its own
 * transaction as under PostgREST. A failing identity (an error in a policy) gets `failure` and
 * sees nothing; the others are unaffected. A temporary function: nothing is added to the
 * project's schema, and only this connection can call it.
 */
const LOOP_FUNCTION = `create or replace function pg_temp.realtime_visible(
    check_sql text, roles text[], claims text[])
  returns table (visible int[], failure text) language plpgsql as $fn$
  begin
    -- PREPARE is not transactional: a call that failed may have left the statement behind.
    if exists (select from pg_catalog.pg_prepared_statements
               where name = 'realtime_visible_check') then
      deallocate realtime_visible_check;
    end if;
    execute 'prepare realtime_visible_check as ' || check_sql;
    for i in 1 .. coalesce(array_length(roles, 1), 0) loop
      visible := null;
      failure := null;
      begin
        perform pg_catalog.set_config('role', roles[i], true),
                pg_catalog.set_config('request.jwt.claims', claims[i], true);
        execute 'execute realtime_visible_check' into visible;
        raise sqlstate 'RTVIS';
      exception
        when sqlstate 'RTVIS' then null;
        when others then failure := sqlerrm;
      end;
      return next;
    end loop;
    deallocate realtime_visible_check;
  end
  $fn$`;

/** Connections that already hold the temporary function. */
const prepared = new WeakSet<PoolClient>();

/**
 * The check as SQL. The keys are typed constants (VALUES), not text cast inside the join: a
 * cast such as text::bigint is not leakproof, so under RLS the planner may not push
 * `t.id = u.k0::bigint` below the policy and scanned the whole table once per identity; with
 * typed keys the comparison is the type's own (leakproof) equality and uses the primary key.
 */
function checkSql(check: VisibilityCheck, literal: (value: string) => string): string {
  const { table, primaryKey, keys } = check;
  const aliases = primaryKey.map((_, index) => `k${index}`);
  const rows = keys.map(
    (key, row) =>
      `(${primaryKey.map((column, index) => `${literal(key[index] ?? '')}::${column.sqlType}`).join(', ')}, ${row + 1})`,
  );
  const conditions = primaryKey
    .map((column, index) => `t.${quoteIdent(column.name)} = u.${aliases[index]}`)
    .join(' and ');
  return `select coalesce(pg_catalog.array_agg(u.ord), '{}')
    from (values ${rows.join(', ')}) as u (${aliases.join(', ')}, ord)
    where exists (select 1 from ${quoteIdent(table.schema)}.${quoteIdent(table.table)} t
                  where ${conditions})`;
}

/**
 * For each identity, the indexes into `check.keys` it can select right now. One read-only
 * transaction (5 s limit) answers for all of them; an identity whose check fails sees nothing
 * and is reported through `onError`. If the whole statement fails (the time limit, a lost
 * connection), every identity is asked again alone, so one slow policy hides only its own rows.
 */
export async function answerVisibility(
  pool: Pool,
  check: VisibilityCheck,
  identities: Identity[],
  onError: (error: unknown) => void,
): Promise<Array<Set<number>>> {
  if (identities.length === 0 || check.keys.length === 0) return identities.map(() => new Set());
  let failure: unknown;
  const client = await pool.connect();
  try {
    if (!prepared.has(client)) {
      await client.query(LOOP_FUNCTION);
      prepared.add(client);
    }
    const literal = (value: string) => client.escapeLiteral(value);
    const array = (values: string[]) => `array[${values.map(literal).join(', ')}]::text[]`;
    const results = (await client.query(
      `begin read only;
       set local statement_timeout = '5s';
       select visible, failure from pg_temp.realtime_visible(${literal(checkSql(check, literal))},
         ${array(identities.map((identity) => identity.role))},
         ${array(identities.map((identity) => JSON.stringify(identity.claims)))});
       commit;`,
    )) as unknown as Array<{ rows: Array<{ visible: number[] | null; failure: string | null }> }>;
    const rows = results[2]?.rows ?? [];
    return identities.map((_, index) => {
      const row = rows[index];
      if (row?.failure) onError(new Error(`visibility check failed: ${row.failure}`));
      return new Set((row?.visible ?? []).map((ord) => ord - 1));
    });
  } catch (error) {
    failure = error;
    await client.query('rollback').catch(() => undefined);
  } finally {
    // A connection whose statement failed is not reused: it may hold a half-done state.
    client.release(failure !== undefined);
  }
  if (identities.length === 1) {
    onError(failure);
    return [new Set()];
  }
  const answers: Array<Set<number>> = [];
  for (const identity of identities) {
    const [answer] = await answerVisibility(pool, check, [identity], onError);
    answers.push(answer ?? new Set());
  }
  return answers;
}
