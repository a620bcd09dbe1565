// Helpers of the console's browser tests: sign in as a demo role and land on a console page,
// collect console errors, and reach the database directly (as the proxy and the status service
// do) to change rows under the page.
import type { RunningStack } from '@capture/stack';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import type { Page } from 'playwright-core';
import { afterAll } from 'vitest';
import { submitPasswordSignIn } from './browser.ts';
import { DEMO } from './dashboard-stack.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const window: any;

export type Role = keyof typeof DEMO;

/** Console errors and uncaught exceptions of a page, which the browser tests expect to be none. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  return errors;
}

/** Signs in as a demo role through the real form and waits for the console frame. */
export async function signInAs(page: Page, dashboardUrl: string, role: Role, path = '/') {
  await page.goto(`${dashboardUrl}/sign-in?next=%2F`);
  await submitPasswordSignIn(page, DEMO[role].email, DEMO[role].password);
  await page.getByTestId('nav-overview').waitFor();
  if (path !== '/') {
    await page.evaluate((target) => {
      window.history.pushState(null, '', target);
      window.dispatchEvent(new Event('dashboard:navigate'));
    }, path);
  }
}

/** A pg pool on the stack's database, closed after the file. */
export function setUpDatabase(stack: () => RunningStack): () => pg.Pool {
  let pool: pg.Pool | undefined;
  afterAll(async () => {
    await pool?.end();
  });
  return () => {
    pool ??= new pg.Pool({ connectionString: stack().dbUrl, max: 2 });
    return pool;
  };
}

/** A supabase-js client signed in as a demo role (the API the dashboard itself uses). */
export async function clientAs(stack: RunningStack, role: Role): Promise<SupabaseClient> {
  const client = createClient(stack.apiUrl, stack.keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  const { error } = await client.auth.signInWithPassword(DEMO[role]);
  if (error) throw new Error(`sign-in as ${role} failed: ${error.message}`);
  return client;
}

/** The service-role client (bypasses RLS), as the proxy and token issuer use. */
export function serviceClient(stack: RunningStack): SupabaseClient {
  return createClient(stack.apiUrl, stack.keys.serviceRoleKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
}

/** Account ids of the demo logins (supabase/seed.sql). */
export const DEMO_USER_IDS: Record<Role, string> = {
  admin: 'a0000000-0000-4000-8000-000000000001',
  user: 'a0000000-0000-4000-8000-000000000002',
  viewer: 'a0000000-0000-4000-8000-000000000003',
};
