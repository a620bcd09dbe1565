// The dashboard's one supabase-js client, configured from /config.json.
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import type { DashboardRuntimeConfig } from './runtime-config.ts';

/**
 * PKCE rather than implicit: a magic link comes back with `?code=`, which only this browser can
 * exchange (its verifier is in this browser's storage), so tokens never sit in a URL and a
 * forwarded or leaked link signs nobody in elsewhere. The cost: the link has to be opened in the
 * browser that asked for it.
 */
export function createDashboardClient(config: DashboardRuntimeConfig): SupabaseClient {
  return createClient(config.supabaseUrl, config.supabasePublishableKey, {
    auth: {
      persistSession: true,
      autoRefreshToken: true,
      detectSessionInUrl: true,
      flowType: 'pkce',
    },
  });
}
