// Starts a throwaway stack on the test fixture project (temp data dir, free ports) and removes
// it again; plus supabase-js clients for it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { type RunningStack, type StackOptions, startStack } from '../../src/index.ts';

export const FIXTURE_PROJECT = fileURLToPath(new URL('../fixtures/project', import.meta.url));

export interface FixtureStack {
  stack: RunningStack;
  dispose(): Promise<void>;
}

/** `options` go over the fixture's (a test's own limits, for example). */
export async function startFixtureStack(options: StackOptions = {}): Promise<FixtureStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'stack-test-'));
  const stack = await startStack({
    projectDir: FIXTURE_PROJECT,
    dataDir,
    ports: 'free',
    ephemeral: true,
    logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
    ...options,
  });
  return {
    stack,
    async dispose() {
      await stack.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Registers beforeAll/afterAll hooks that give the calling test file its own stack; the returned
 * getter is valid inside tests.
 */
export function useFixtureStack(): () => RunningStack {
  let fixture: FixtureStack | undefined;
  beforeAll(async () => {
    fixture = await startFixtureStack();
  });
  afterAll(async () => {
    await fixture?.dispose();
  });
  return () => {
    if (!fixture) throw new Error('the fixture stack is not started');
    return fixture.stack;
  };
}

/** A supabase-js client as an app would make it; no session persistence between tests. */
export function clientFor(stack: RunningStack, key = stack.keys.publishableKey): SupabaseClient {
  return createClient(stack.apiUrl, key, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
}

let counter = 0;
/** A unique address per call, so tests in one file never collide. */
export function uniqueEmail(prefix = 'user'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}@example.com`;
}
