// The batched RLS check of postgres_changes (docs/realtime.md "Changes and RLS", 3): one statement
// answers a change for many identities. Each identity must still see exactly what its own policies
// allow, as if it had its own transaction: nothing a policy sets for one identity may carry over to
// the next, a policy failing for one identity hides only its rows, and the check looks rows up by
// primary key instead of running the policy over the whole table.
import type { RealtimeChannel } from '@supabase/supabase-js';
import { SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerVisibility, type Identity } from '../src/realtime/visibility.ts';
import { clientFor, useFixtureStack } from './helpers/fixture-stack.ts';
import { until } from './helpers/until.ts';

const getStack = useFixtureStack();

const USERS = 40;
/** Its policy raises: this identity's check fails. */
const FAILING_USER = '00000000-0000-4000-8000-00000000dead';
/** A row whose policy raises when evaluated: only a check that scans the table reaches it. */
const POISON_ROW = 666;

let pool: pg.Pool;
const users = Array.from({ length: USERS }, () => crypto.randomUUID());
const asUser = (sub: string): Identity => ({
  role: 'authenticated',
  claims: { role: 'authenticated', sub, aud: 'authenticated' },
});

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: getStack().dbUrl, max: 1 });
  await pool.query(`
    create table public.vis_items (id bigint primary key, owner uuid not null);
    alter table public.vis_items enable row level security;
    -- Caches the caller in a transaction-local setting, as policy helpers do to read the claims
    -- once: an identity that inherited another's settings would be taken for that user.
    create function public.vis_cached_uid() returns uuid language plpgsql volatile as $$
    begin
      if coalesce(current_setting('vis.cached_uid', true), '') = '' then
        perform set_config('vis.cached_uid', auth.uid()::text, true);
      end if;
      return current_setting('vis.cached_uid')::uuid;
    end $$;
    create function public.vis_guard(row_id bigint) returns boolean language plpgsql volatile as $$
    begin
      if row_id = ${POISON_ROW} then raise exception 'the poison row was evaluated'; end if;
      if auth.uid() = '${FAILING_USER}' then raise exception 'this user''s policy fails'; end if;
      return true;
    end $$;
    create policy vis_items_own on public.vis_items for select to authenticated
      using (public.vis_guard(id) and owner = public.vis_cached_uid());
    revoke all on public.vis_items from anon;
    grant select on public.vis_items to authenticated, service_role;
    alter publication supabase_realtime add table public.vis_items;`);
  // Rows 1..USERS belong to the users in order; thousands more (the poison row among them)
  // belong to nobody here, so a check that scans the table would evaluate the poison row.
  await pool.query(
    `insert into public.vis_items (id, owner)
     select n, coalesce(($1::uuid[])[n], gen_random_uuid()) from generate_series(1, 5000) n`,
    [users],
  );
  await pool.query('analyze public.vis_items');
  await pool.query(
    `insert into auth.users (instance_id, id, aud, role, email)
     select '00000000-0000-0000-0000-000000000000', id, 'authenticated', 'authenticated',
            'vis-' || id || '@test.invalid'
     from unnest($1::uuid[]) id`,
    [users],
  );
});

afterAll(async () => {
  await pool?.end();
});

describe('one statement for many identities', () => {
  const check = {
    table: { schema: 'public', table: 'vis_items' },
    primaryKey: [{ name: 'id', type: 'int8', sqlType: 'bigint' }],
    keys: users.map((_, index) => [String(index + 1)]),
  };

  it('answers each identity by its own policies, undoing what they set before the next', async () => {
    const errors: unknown[] = [];
    const answers = await answerVisibility(
      pool,
      check,
      [
        ...users.map(asUser),
        { role: 'service_role', claims: { role: 'service_role' } },
        { role: 'anon', claims: { role: 'anon' } },
        asUser(FAILING_USER),
      ],
      (error) => errors.push(error),
    );
    // Each user sees exactly its own row: not the first user's, whose id the cache held first.
    users.forEach((_, index) => {
      expect([...(answers[index] as Set<number>)]).toEqual([index]);
    });
    // service_role bypasses RLS, as under PostgREST.
    expect(answers[USERS]?.size).toBe(USERS);
    // anon may not select the table, and one user's policy raises: they see nothing, alone.
    expect(answers[USERS + 1]?.size).toBe(0);
    expect(answers[USERS + 2]?.size).toBe(0);
    expect(errors.map(String).sort()).toEqual([
      expect.stringContaining('permission denied for table vis_items'),
      expect.stringContaining("this user's policy fails"),
    ]);
  });

  it('looks the keys up by primary key rather than running the policy over the table', async () => {
    // The poison row is not asked about; a sequential scan would still evaluate its policy and
    // fail every identity's check.
    const errors: unknown[] = [];
    const answers = await answerVisibility(pool, check, users.map(asUser), (error) =>
      errors.push(error),
    );
    expect(errors).toEqual([]);
    expect(answers.map((answer) => answer.size)).toEqual(users.map(() => 1));
  });

  it('leaves the connection as it found it: role, claims and settings', async () => {
    const client = await pool.connect();
    try {
      // The pool's one connection ran the checks above.
      const { rows } = await client.query<{ user: string; claims: string; cached: string }>(
        `select current_user as user, coalesce(current_setting('request.jwt.claims', true), '') as claims,
                coalesce(current_setting('vis.cached_uid', true), '') as cached`,
      );
      expect(rows[0]).toEqual({ user: 'postgres', claims: '', cached: '' });
    } finally {
      client.release();
    }
  });
});

describe('through realtime-js', () => {
  const channels: RealtimeChannel[] = [];
  afterAll(async () => {
    for (const channel of channels) await channel.unsubscribe();
  });

  it('gives each of many subscribers only its own rows of one batch', async () => {
    const stack = getStack();
    const secret = new TextEncoder().encode(stack.keys.jwtSecret);
    // More subscribers than one statement takes, so the answers of several statements are
    // matched back to their identities.
    const subscribers = users.slice(0, 30);
    const received = new Map<string, number[]>(subscribers.map((sub) => [sub, []]));
    await Promise.all(
      subscribers.map(async (sub, index) => {
        const token = await new SignJWT({ role: 'authenticated', sub, aud: 'authenticated' })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setExpirationTime('10m')
          .sign(secret);
        const client = clientFor(stack);
        await client.realtime.setAuth(token);
        const channel = client
          .channel(`vis-${index}`)
          .on('postgres_changes', { event: '*', schema: 'public', table: 'vis_items' }, (p) => {
            received.get(sub)?.push((p.new as { id: number }).id);
          });
        channels.push(channel);
        await new Promise<void>((resolve, reject) =>
          channel.subscribe((status, error) =>
            status === 'SUBSCRIBED'
              ? resolve()
              : status === 'CHANNEL_ERROR' || status === 'TIMED_OUT'
                ? reject(new Error(`${status}: ${error?.message}`))
                : undefined,
          ),
        );
      }),
    );
    // One statement, so one batch: each subscriber's row, plus one that is nobody's here.
    await pool.query(
      `insert into public.vis_items (id, owner)
       select 10000 + n, coalesce(($1::uuid[])[n], gen_random_uuid())
       from generate_series(1, $2::int + 1) n`,
      [subscribers, subscribers.length],
    );
    await until(() => ([...received.values()].every((ids) => ids.length > 0) ? true : undefined));
    // Later polls must not bring anything more.
    await new Promise((resolve) => setTimeout(resolve, 400));
    subscribers.forEach((sub, index) => {
      expect(received.get(sub)).toEqual([10001 + index]);
    });
  });
});
