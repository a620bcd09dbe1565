// A throwaway stack of this repository (migrations and seed) and the five callers of the
// isolation matrix: an admin, scoped members A and B, a user without capabilities, and anon.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, type RunningStack, startStack } from '@capture/stack';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';

export interface Actor {
  name: 'admin' | 'A' | 'B' | 'nocap' | 'anon';
  id: string | null;
  accessToken: string | null;
  client: SupabaseClient;
}

export interface Actors {
  stack: RunningStack;
  service: SupabaseClient;
  admin: Actor;
  A: Actor;
  B: Actor;
  nocap: Actor;
  anon: Actor;
}

const clientOptions = {
  auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
};

let counter = 0;
async function signUpActor(stack: RunningStack, name: Actor['name']): Promise<Actor> {
  counter += 1;
  const email = `${name.toLowerCase()}-${process.pid}-${counter}-${Date.now()}@test.local`;
  const client = createClient(stack.apiUrl, stack.keys.publishableKey, clientOptions);
  const { data, error } = await client.auth.signUp({ email, password: 'test-password-1' });
  if (error || !data.session || !data.user) throw new Error(`sign-up of ${name} failed: ${error}`);
  // A client that sends the user's token as both apikey and bearer, as 001 §5 rule 3 asks.
  const token = data.session.access_token;
  const authed = createClient(stack.apiUrl, token, {
    ...clientOptions,
    global: { headers: { Authorization: `Bearer ${token}` } },
  });
  return { name, id: data.user.id, accessToken: token, client: authed };
}

export async function setRoles(service: SupabaseClient, userId: string, slugs: string[]) {
  const deleted = await service.from('user_roles').delete().eq('user_id', userId);
  if (deleted.error) throw new Error(deleted.error.message);
  if (slugs.length === 0) return;
  const { data: roles } = await service.from('roles').select('id').in('slug', slugs);
  const inserted = await service
    .from('user_roles')
    .insert((roles ?? []).map((role) => ({ user_id: userId, role_id: role.id })));
  if (inserted.error) throw new Error(inserted.error.message);
}

/** Starts the repo stack for this test file and signs up the five actors. */
export function useActors(): () => Actors {
  let actors: Actors | undefined;
  let dataDir = '';
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'data-api-test-'));
    const stack = await startStack({
      projectDir: REPO_ROOT,
      dataDir,
      ports: 'free',
      ephemeral: true,
      // Frequent status snapshots, so feed tests see service_status UPDATEs quickly.
      statusIntervalMs: 500,
      // The capture tests send traffic through the stack's proxy to origins on loopback, which
      // the proxy refuses unless told (docs/proxy.md "Listeners", Destinations).
      proxyDestinations: ['public', '127.0.0.0/8', 'localhost'],
      logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
    });
    const service = createClient(stack.apiUrl, stack.keys.serviceRoleKey, clientOptions);
    const [admin, A, B, nocap] = await Promise.all([
      signUpActor(stack, 'admin'),
      signUpActor(stack, 'A'),
      signUpActor(stack, 'B'),
      signUpActor(stack, 'nocap'),
    ]);
    await setRoles(service, admin.id as string, ['admin']);
    await setRoles(service, nocap.id as string, []);
    const anon: Actor = {
      name: 'anon',
      id: null,
      accessToken: null,
      client: createClient(stack.apiUrl, stack.keys.publishableKey, clientOptions),
    };
    actors = { stack, service, admin, A, B, nocap, anon };
  });
  afterAll(async () => {
    await actors?.stack.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return () => {
    if (!actors) throw new Error('the stack is not started');
    return actors;
  };
}
