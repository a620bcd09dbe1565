// The proxy's own queries (devices, ports, bindings, breakpoints) run as service_role whoever
// PROXY_DB_URL connects as (docs/proxy.md "Deploying"): one transaction with the role and its JWT
// claim set locally, in one round trip; the claim too, since has_capability reads the claim, not
// the role.
import type pg from 'pg';

export async function asServiceRole<T extends pg.QueryResultRow>(
  pool: pg.Pool,
  sql: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<T>> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `select set_config('role', 'service_role', true),
              set_config('request.jwt.claims', '{"role":"service_role"}', true)`,
    );
    const result = await client.query<T>(sql, values);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
