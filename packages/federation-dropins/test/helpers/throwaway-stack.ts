// A throwaway stack of this repository (temp data dir, free loopback ports) for one test file,
// stopped and removed in afterAll; plus supabase-js clients as the companion app makes them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, type RunningStack, startStack } from '@capture/stack';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';

/**
 * Registers beforeAll/afterAll hooks giving the calling file its own stack; `functionSecrets` is
 * read in beforeAll, so it may use servers the file started first.
 */
export function useThrowawayStack(
  functionSecrets?: () => Record<string, string>,
): () => RunningStack {
  let stack: RunningStack | undefined;
  let dataDir = '';
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'federation-dropins-test-'));
    stack = await startStack({
      projectDir: REPO_ROOT,
      dataDir,
      ports: 'free',
      ephemeral: true,
      functionSecrets: functionSecrets?.(),
      logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
    });
  });
  afterAll(async () => {
    try {
      await stack?.stop();
    } finally {
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });
  return () => {
    if (!stack) throw new Error('the stack is not started');
    return stack;
  };
}

/** The companion app's client: in-memory session storage, no background refresh. */
export function appClient(stack: RunningStack): SupabaseClient {
  return createClient(stack.apiUrl, stack.keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
}

let counter = 0;
/** A unique address per call, so tests never collide. */
export function uniqueEmail(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}@example.com`;
}

/** Signs up a user with a password and returns the session a fresh sign-up yields. */
export async function signUpUser(stack: RunningStack, prefix: string) {
  const email = uniqueEmail(prefix);
  const password = 'test-password-1';
  const { data, error } = await appClient(stack).auth.signUp({ email, password });
  if (error || !data.session || !data.user) throw new Error(`sign-up failed: ${error?.message}`);
  return { email, password, user_id: data.user.id, session: data.session };
}
