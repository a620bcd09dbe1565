// Realtime Authorization for private channels, as Supabase Realtime decides it
// (lib/realtime/tenants/authorization.ex): RLS on realtime.messages, run as the joining user with
// their claims and realtime.topic() set to the channel's topic. Read is a SELECT of rows the
// service inserted for the topic (extension broadcast and presence), write an INSERT as the user;
// everything is rolled back. docs/realtime.md "Private channels".
import type { Pool, PoolClient } from 'pg';
import type { Claims } from './tokens.ts';

export interface ChannelPolicies {
  broadcast: { read: boolean; write: boolean };
  presence: { read: boolean; write: boolean };
}

/** Raised when the check could not run at all (no connection, a broken transaction). */
export class AuthorizationUnavailable extends Error {
  override name = 'AuthorizationUnavailable';
}

/**
 * One round trip for the four answers. The outer block is always rolled back (the RTAUT raise),
 * so the probe rows, the role, the claims and realtime.topic are gone afterwards. Each write probe
 * sits in its own block: a denied INSERT (42501, what a failing WITH CHECK raises) answers no,
 * as upstream's savepoint inserts. Any other error in a policy answers no too and is reported
 * in `failure` (upstream logs it as RlsPolicyError and denies). A temporary function: nothing is
 * added to the project's schema, and only this connection can call it.
 */
const AUTHORIZE_FUNCTION = `create or replace function pg_temp.realtime_authorize(
    p_topic text, p_role text, p_claims text)
  returns table (broadcast_read boolean, presence_read boolean, broadcast_write boolean,
                 presence_write boolean, failure text)
  language plpgsql as $fn$
  declare
    broadcast_probe uuid;
    presence_probe uuid;
    failures text[] := '{}';
  begin
    broadcast_read := false;
    presence_read := false;
    broadcast_write := false;
    presence_write := false;
    begin
      insert into realtime.messages (topic, extension) values (p_topic, 'broadcast')
        returning id into broadcast_probe;
      insert into realtime.messages (topic, extension) values (p_topic, 'presence')
        returning id into presence_probe;
      perform pg_catalog.set_config('role', p_role, true),
              pg_catalog.set_config('realtime.topic', p_topic, true),
              pg_catalog.set_config('request.jwt.claims', p_claims, true),
              pg_catalog.set_config('request.headers', '{}', true);
      begin
        select coalesce(bool_or(m.id = broadcast_probe and m.extension = 'broadcast'), false),
               coalesce(bool_or(m.id = presence_probe and m.extension = 'presence'), false)
          into broadcast_read, presence_read
          from realtime.messages m
         where m.topic = p_topic and m.id in (broadcast_probe, presence_probe);
      exception when others then
        failures := failures || ('read: ' || sqlerrm);
      end;
      begin
        insert into realtime.messages (topic, extension) values (p_topic, 'broadcast');
        broadcast_write := true;
      exception
        when insufficient_privilege then null;
        when others then failures := failures || ('broadcast write: ' || sqlerrm);
      end;
      begin
        insert into realtime.messages (topic, extension) values (p_topic, 'presence');
        presence_write := true;
      exception
        when insufficient_privilege then null;
        when others then failures := failures || ('presence write: ' || sqlerrm);
      end;
      raise sqlstate 'RTAUT';
    exception when sqlstate 'RTAUT' then null;
    end;
    failure := nullif(array_to_string(failures, '; '), '');
    return next;
  end
  $fn$`;

/** Connections that already hold the temporary function. */
const prepared = new WeakSet<PoolClient>();

/**
 * What the user behind `claims` may do on the private channel `topic` (the name without
 * `realtime:`, as realtime.topic() returns it). Policy errors deny and go to `onPolicyError`;
 * a check that cannot run throws AuthorizationUnavailable.
 */
export async function authorizeChannel(
  pool: Pool,
  topic: string,
  claims: Claims,
  onPolicyError: (message: string) => void,
): Promise<ChannelPolicies> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new AuthorizationUnavailable('no database connection', { cause: error });
  }
  let failed = false;
  try {
    if (!prepared.has(client)) {
      await client.query(AUTHORIZE_FUNCTION);
      prepared.add(client);
    }
    await client.query("begin; set local statement_timeout = '5s'");
    const { rows } = await client.query<{
      broadcast_read: boolean;
      presence_read: boolean;
      broadcast_write: boolean;
      presence_write: boolean;
      failure: string | null;
    }>('select * from pg_temp.realtime_authorize($1, $2, $3)', [
      topic,
      claims.role,
      JSON.stringify(claims),
    ]);
    await client.query('rollback');
    const row = rows[0];
    if (!row) throw new Error('the authorization check returned no row');
    if (row.failure) onPolicyError(row.failure);
    return {
      broadcast: { read: row.broadcast_read, write: row.broadcast_write },
      presence: { read: row.presence_read, write: row.presence_write },
    };
  } catch (error) {
    failed = true;
    await client.query('rollback').catch(() => undefined);
    throw new AuthorizationUnavailable('the authorization check failed', { cause: error });
  } finally {
    // A connection whose check failed is not reused: it may hold a half-done transaction.
    client.release(failed);
  }
}
