// A throwaway stack of this repository (free ports, temp data dir), which serves the dashboard on
// its dashboard port: the origin the auth service takes as site URL and allows as a redirect, so
// magic links come back to it. Reused by every browser test of the dashboard.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  REPO_ROOT,
  type RunningStack,
  readMailbox,
  type StackOptions,
  startStack,
} from '@capture/stack';
import { createClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { DashboardRuntimeConfig } from '../../server/index.ts';
import { ensureDashboardBuilt } from './dashboard-build.ts';

export type DashboardStack = {
  stack: RunningStack;
  dashboardUrl: string;
  config: DashboardRuntimeConfig;
};

/** Demo logins of supabase/seed.sql. */
export const DEMO = {
  admin: { email: 'admin@demo.local', password: 'demo-admin-pass' },
  user: { email: 'user@demo.local', password: 'demo-user-pass' },
  viewer: { email: 'viewer@demo.local', password: 'demo-viewer-pass' },
} as const;

/** Stack options a browser test may add (read in beforeAll, after the file's earlier hooks). */
export type ExtraStackOptions = Pick<
  StackOptions,
  'proxyDestinations' | 'functionSecrets' | 'statusIntervalMs'
>;

/** Registers beforeAll/afterAll hooks giving the calling file its own stack and dashboard. */

export function setUpDashboardStack(
  options: () => ExtraStackOptions = () => ({}),
): () => DashboardStack {
  let running: DashboardStack | undefined;
  let stack: RunningStack | undefined;
  let dataDir = '';
  beforeAll(async () => {
    await ensureDashboardBuilt();
    dataDir = mkdtempSync(join(tmpdir(), 'dashboard-test-'));
    const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' });
    stack = await startStack({
      projectDir: REPO_ROOT,
      dataDir,
      ports: 'free',
      ephemeral: true,
      logger,
      ...options(),
    });
    const config: DashboardRuntimeConfig = {
      supabaseUrl: stack.apiUrl,
      supabasePublishableKey: stack.keys.publishableKey,
      mcpUrl: stack.mcpUrl,
    };
    running = { stack, dashboardUrl: stack.dashboardUrl, config };
  });
  afterAll(async () => {
    try {
      await stack?.stop();
    } finally {
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });
  return () => {
    if (!running) throw new Error('the dashboard stack is not started');
    return running;
  };
}

let counter = 0;
/** A fresh confirmed account with a password (sign-up signs in at once: autoconfirm). */
export async function createAccount(stack: RunningStack, prefix: string) {
  counter += 1;
  const email = `${prefix}-${process.pid}-${Date.now()}-${counter}@example.com`;
  const password = 'test-password-1';
  const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  const { data, error } = await client.auth.signUp({ email, password });
  if (error || !data.user) throw new Error(`sign-up failed: ${error?.message}`);
  return { email, password, userId: data.user.id };
}

/** Takes every app role from an account (the consent page then shows "no role"). */
export async function removeRoles(stack: RunningStack, userId: string): Promise<void> {
  const service = createClient(stack.apiUrl, stack.keys.serviceRoleKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  const { error } = await service.from('user_roles').delete().eq('user_id', userId);
  if (error) throw new Error(`removing roles failed: ${error.message}`);
}

/** The newest magic link sent to `to` after `since`, waiting for the mail to land. */
export async function waitForMagicLink(
  stack: RunningStack,
  to: string,
  since: Date,
): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const mail = readMailbox(stack.mailboxDir, to)
      .filter((message) => message.kind === 'magiclink' && new Date(message.sentAt) >= since)
      .at(-1);
    if (mail) return mail.actionLink;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no magic link for ${to}`);
}
