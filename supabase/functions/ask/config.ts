// The ask function's settings, read once from the function environment (function secrets: the
// local stack passes supabase/functions/.env and its own environment) and validated; startup
// fails fast on a bad value. docs/assistant.md lists each option.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';

const flag = z.enum(['0', '1']);

const environmentSchema = z.object({
  /** Set by the edge runtime: where /rest/v1 is served (every read goes there as the caller). */
  SUPABASE_URL: z.url(),
  /** Set by the edge runtime; only hashed into the placeholder key when none is configured. */
  SUPABASE_SERVICE_ROLE_KEY: z.string().min(1),
  /** The model provider's key. Unset: the assistant answers 503 / an error event. */
  OPENAI_API_KEY: z.string().optional(),
  /** Any OpenAI-compatible Responses API base (default: the SDK's, api.openai.com/v1). */
  OPENAI_BASE_URL: z.url().optional(),
  /** Model when no specialist agent is chosen (an agent's own `model` wins). */
  ASSISTANT_MODEL: z.string().min(1).default('gpt-4.1-mini'),
  /** Model calls per question; the last one may not call tools, so an answer always comes. */
  ASSISTANT_MAX_STEPS: z.coerce.number().int().min(1).max(20).default(6),
  /** Wall-clock budget of one question (Supabase allows 150 s on the free plan). */
  ASSISTANT_TIME_LIMIT_MS: z.coerce.number().int().min(1_000).max(400_000).default(120_000),
  /** Keep-alive comment interval of the stream (001 §8: about every 15 s). */
  ASSISTANT_PING_MS: z.coerce.number().int().min(10).max(60_000).default(15_000),
  /** Questions per user per minute, counted in Postgres across every instance. */
  ASSISTANT_RATE_PER_MINUTE: z.coerce.number().int().min(1).max(10_000).default(20),
  /** Retries of a failed model call (429/5xx/connection) inside the SDK. */
  ASSISTANT_MODEL_RETRIES: z.coerce.number().int().min(0).max(5).default(1),
  /** Offer the provider's built-in web_search tool (OpenAI; turn off for providers without it). */
  ASSISTANT_WEB_SEARCH: flag.default('1'),
  /** Dashboard origin the answer links rows to ({dashboard_url}); served at its root. */
  ASSISTANT_DASHBOARD_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:54323'),
  /** HMAC key of the placeholders (>= 16 bytes); default derived from the service role key. */
  ASSISTANT_REDACTION_KEY: z.string().min(16).optional(),
});

export interface AskConfig {
  supabaseUrl: string;
  /** Undefined: no provider configured. */
  openaiApiKey: string | undefined;
  openaiBaseUrl: string | undefined;
  defaultModel: string;
  maxSteps: number;
  timeLimitMs: number;
  pingMs: number;
  ratePerMinute: number;
  modelRetries: number;
  webSearch: boolean;
  dashboardUrl: string;
  redactionKey: Uint8Array;
}

async function deriveKey(secret: string): Promise<Uint8Array> {
  const bytes = new TextEncoder().encode(`assistant-redaction-placeholders|${secret}`);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
}

export async function readConfig(environment: Record<string, string | undefined>): Promise<
  AskConfig
> {
  const env = environmentSchema.parse(environment);
  return {
    supabaseUrl: env.SUPABASE_URL.replace(/\/+$/, ''),
    openaiApiKey: env.OPENAI_API_KEY || undefined,
    openaiBaseUrl: env.OPENAI_BASE_URL?.replace(/\/+$/, ''),
    defaultModel: env.ASSISTANT_MODEL,
    maxSteps: env.ASSISTANT_MAX_STEPS,
    timeLimitMs: env.ASSISTANT_TIME_LIMIT_MS,
    pingMs: env.ASSISTANT_PING_MS,
    ratePerMinute: env.ASSISTANT_RATE_PER_MINUTE,
    modelRetries: env.ASSISTANT_MODEL_RETRIES,
    webSearch: env.ASSISTANT_WEB_SEARCH === '1',
    // The dashboard's routes sit at its root (dashboard-links.ts): only the origin counts.
    dashboardUrl: new URL(env.ASSISTANT_DASHBOARD_URL).origin,
    redactionKey: env.ASSISTANT_REDACTION_KEY
      ? new TextEncoder().encode(env.ASSISTANT_REDACTION_KEY)
      : await deriveKey(env.SUPABASE_SERVICE_ROLE_KEY),
  };
}
