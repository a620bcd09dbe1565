// supabase-js against stock PostgREST behind the gateway, on the fixture schema.
import type { SupabaseClient } from '@supabase/supabase-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';

const stack = useFixtureStack();
let alice: SupabaseClient;
let bob: SupabaseClient;
let aliceToken: string;

async function signedInClient(email: string): Promise<{ client: SupabaseClient; token: string }> {
  const client = clientFor(stack());
  const { data, error } = await client.auth.signUp({ email, password: 'correct-horse-1' });
  if (error || !data.session) throw error ?? new Error('no session');
  return { client, token: data.session.access_token };
}

beforeAll(async () => {
  const a = await signedInClient(uniqueEmail('alice'));
  alice = a.client;
  aliceToken = a.token;
  bob = (await signedInClient(uniqueEmail('bob'))).client;
  const rows = Array.from({ length: 12 }, (_, index) => ({
    title: `task ${String(index).padStart(2, '0')}`,
    done: index % 3 === 0,
    priority: index % 4,
  }));
  const { error } = await alice.from('todos').insert(rows);
  if (error) throw error;
});

describe('REST through the gateway with supabase-js', () => {
  it('selects with filters, order, range and an exact count', async () => {
    const { data, count, error, status } = await alice
      .from('todos')
      .select('title, priority', { count: 'exact' })
      .gte('priority', 2)
      .order('title', { ascending: false })
      .range(0, 2);
    expect(error).toBeNull();
    expect(status).toBe(206);
    expect(count).toBe(6);
    expect(data).toEqual([
      { title: 'task 11', priority: 3 },
      { title: 'task 10', priority: 2 },
      { title: 'task 07', priority: 3 },
    ]);
  });

  it('filters with eq, neq, in, like, ilike and is', async () => {
    const eq = await alice.from('todos').select('title').eq('title', 'task 03');
    expect(eq.data).toEqual([{ title: 'task 03' }]);
    const neq = await alice
      .from('todos')
      .select('id', { count: 'exact', head: true })
      .neq('done', true);
    expect(neq.count).toBe(8);
    const inList = await alice
      .from('todos')
      .select('title')
      .in('title', ['task 01', 'task 02'])
      .order('title');
    expect(inList.data).toEqual([{ title: 'task 01' }, { title: 'task 02' }]);
    const like = await alice.from('todos').select('title').like('title', 'task 1%').order('title');
    expect(like.data?.map((row) => row.title)).toEqual(['task 10', 'task 11']);
    const ilike = await alice
      .from('todos')
      .select('title')
      .ilike('title', 'TASK 0_')
      .order('title')
      .limit(2);
    expect(ilike.data?.map((row) => row.title)).toEqual(['task 00', 'task 01']);
    const isNull = await alice.from('todos').select('id').is('owner_id', null);
    expect(isNull.data).toEqual([]);
  });

  it('inserts, updates, upserts and deletes with return=representation', async () => {
    const inserted = await alice
      .from('todos')
      .insert({ title: 'write tests' })
      .select('id, title, done')
      .single();
    expect(inserted.status).toBe(201);
    expect(inserted.data).toMatchObject({ title: 'write tests', done: false });
    const id = inserted.data?.id as number;

    const updated = await alice.from('todos').update({ done: true }).eq('id', id).select('done');
    expect(updated.status).toBe(200);
    expect(updated.data).toEqual([{ done: true }]);

    const upserted = await alice
      .from('todos')
      .upsert({
        id,
        title: 'write more tests',
        done: false,
        owner_id: (await alice.auth.getUser()).data.user?.id,
      })
      .select('title, done');
    expect(upserted.error).toBeNull();
    expect(upserted.data).toEqual([{ title: 'write more tests', done: false }]);

    const deleted = await alice.from('todos').delete().eq('id', id).select('id');
    expect(deleted.data).toEqual([{ id }]);
    const gone = await alice.from('todos').select('id').eq('id', id);
    expect(gone.data).toEqual([]);
  });

  it('calls an RPC with named arguments', async () => {
    const all = await alice.rpc('count_my_todos');
    expect(all.data).toBe(12);
    const done = await alice.rpc('count_my_todos', { only_done: true });
    expect(done.data).toBe(4);
    const who = await alice.rpc('whoami');
    expect(who.data).toMatchObject({ role: 'authenticated' });
  });

  it('hides rows of another user (RLS), with 200 and an empty list', async () => {
    const { data, error, status } = await bob.from('todos').select('id');
    expect(error).toBeNull();
    expect(status).toBe(200);
    expect(data).toEqual([]);
  });

  it('refuses an anonymous insert with 401 and an authenticated forged owner with 403 (42501)', async () => {
    const anon = clientFor(stack());
    const anonymous = await anon.from('todos').insert({ title: 'nope' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.error?.code).toBe('42501');

    const bobUser = (await bob.auth.getUser()).data.user;
    const aliceUser = (await alice.auth.getUser()).data.user;
    expect(bobUser?.id).not.toBe(aliceUser?.id);
    const forged = await bob.from('todos').insert({ title: 'as alice', owner_id: aliceUser?.id });
    expect(forged.status).toBe(403);
    expect(forged.error).toMatchObject({
      code: '42501',
      message: 'new row violates row-level security policy for table "todos"',
    });
  });

  it('answers .single() on zero rows with 406 PGRST116', async () => {
    const { error, status } = await alice
      .from('todos')
      .select('id')
      .eq('title', 'no such')
      .single();
    expect(status).toBe(406);
    expect(error?.code).toBe('PGRST116');
  });

  it('lets anon read public rows with only the publishable key', async () => {
    const { data } = await clientFor(stack()).from('notes').select('body').order('id');
    expect(data).toEqual([{ body: 'first' }, { body: 'second' }, { body: 'third' }]);
  });

  it('honours a Range header', async () => {
    const response = await fetch(`${stack().apiUrl}/rest/v1/notes?select=body&order=id`, {
      headers: { apikey: stack().keys.anonKey, Range: '1-2', Prefer: 'count=exact' },
    });
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe('1-2/3');
    expect(await response.json()).toEqual([{ body: 'second' }, { body: 'third' }]);
  });
});

describe('the two-header rule for access tokens (001 §5.3)', () => {
  const url = () => `${stack().apiUrl}/rest/v1/todos?select=id&limit=1`;

  it('accepts the access token in both Authorization and apikey', async () => {
    const response = await fetch(url(), {
      headers: { apikey: aliceToken, Authorization: `Bearer ${aliceToken}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toHaveLength(1);
  });

  it('refuses the access token in Authorization only', async () => {
    const response = await fetch(url(), { headers: { Authorization: `Bearer ${aliceToken}` } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('refuses the access token in apikey only', async () => {
    const response = await fetch(url(), { headers: { apikey: aliceToken } });
    expect(response.status).toBe(401);
    const body = (await response.json()) as { message: string };
    expect(body.message).toMatch(/both the Authorization and apikey/);
  });

  it('refuses a tampered token even when both headers carry it', async () => {
    const tampered = `${aliceToken.slice(0, -4)}AAAA`;
    const response = await fetch(url(), {
      headers: { apikey: tampered, Authorization: `Bearer ${tampered}` },
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { code: string }).code).toBe('PGRST301');
  });
});

describe('gateway', () => {
  it('answers a CORS preflight itself, echoing the requested headers', async () => {
    const response = await fetch(`${stack().apiUrl}/rest/v1/todos`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://localhost:5173',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, apikey, content-type, x-client-info',
      },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-headers')).toBe(
      'authorization, apikey, content-type, x-client-info',
    );
    expect(response.headers.get('access-control-allow-methods')).toContain('PATCH');
  });

  it('answers 404 for a path outside the served prefixes', async () => {
    const response = await fetch(`${stack().apiUrl}/graphql/v1`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ message: 'no Route matched with those values' });
  });
});
