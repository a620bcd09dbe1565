// Reads and proposals as the caller (001 §5.4): supabase-js against PostgREST with the caller's own
// access token in both headers (001 §5.3), so RLS, has_capability and the revocation hook apply
// to every query. Never the service role. Every request carries the question's abort signal
// (client gone, time cap) and its own 10 s cap (PostgREST's statement timeout is 8 s).
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { createClient, type SupabaseClient } from 'npm:@supabase/supabase-js@2.119.0';

const QUERY_TIMEOUT_MS = 10_000;

export type CallerClient = SupabaseClient;

export function createCallerClient(
  supabaseUrl: string,
  accessToken: string,
  signal: AbortSignal,
  send: typeof fetch = fetch,
): CallerClient {
  const fetchWithSignal: typeof fetch = (input, init) =>
    send(input, {
      ...init,
      signal: AbortSignal.any([signal, AbortSignal.timeout(QUERY_TIMEOUT_MS)]),
    });
  return createClient(supabaseUrl, accessToken, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { headers: { Authorization: `Bearer ${accessToken}` }, fetch: fetchWithSignal },
  });
}

/** PostgREST's error, as supabase-js reports it. */
export interface DataError {
  code?: string;
  message: string;
  details?: string | null;
}

export class DataQueryError extends Error {
  readonly code: string | undefined;
  readonly details: string | null | undefined;

  constructor(error: DataError) {
    super(error.message);
    this.name = 'DataQueryError';
    this.code = error.code;
    this.details = error.details;
  }
}

/** The data of a supabase-js result, or its error thrown. */
export function dataOf<T>(result: { data: T | null; error: DataError | null }): T {
  if (result.error) throw new DataQueryError(result.error);
  return result.data as T;
}
