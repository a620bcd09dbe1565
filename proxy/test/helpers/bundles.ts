// Users and certificate bundles for proxy tests, made the way the API makes them: a user row in
// auth.users (the default role trigger makes it a member) and `issue_proxy_bundle` called under
// that user's JWT claims.
import type pg from 'pg';

export interface Bundle {
  bundle_id: string;
  password: string;
  ca_certificate: string;
}

export async function createUser(pool: pg.Pool, id: string, email: string): Promise<void> {
  await pool.query(
    `insert into auth.users (instance_id, id, aud, role, email)
     values ('00000000-0000-0000-0000-000000000000', $1, 'authenticated', 'authenticated', $2)`,
    [id, email],
  );
}

export async function issueBundle(pool: pg.Pool, owner: string): Promise<Bundle> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(`select set_config('request.jwt.claims', $1, true)`, [
      JSON.stringify({ sub: owner, role: 'authenticated' }),
    ]);
    await client.query('set local role authenticated');
    const { rows } = await client.query<{ bundle: Bundle }>(
      `select public.issue_proxy_bundle('test phone') as bundle`,
    );
    await client.query('commit');
    return rows[0]?.bundle as Bundle;
  } finally {
    client.release();
  }
}

export function basicAuthorization(bundle: Bundle): string {
  return `Basic ${Buffer.from(`${bundle.bundle_id}:${bundle.password}`).toString('base64')}`;
}
