// The whoami function's settings, read once from the function environment and validated
// (startup fails fast on a bad value).
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';

const environmentSchema = z.object({
  /** Set by the edge runtime: where /rest/v1 (and whoami()) is served. */
  SUPABASE_URL: z.url(),
  /** How long PostgREST may take to answer whoami() before the function answers 503. */
  WHOAMI_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(5_000),
});

export interface WhoamiConfig {
  supabaseUrl: string;
  timeoutMs: number;
}

export function readConfig(environment: Record<string, string | undefined>): WhoamiConfig {
  const env = environmentSchema.parse(environment);
  return {
    supabaseUrl: env.SUPABASE_URL.replace(/\/+$/, ''),
    timeoutMs: env.WHOAMI_TIMEOUT_MS,
  };
}
