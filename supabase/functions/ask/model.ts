// The model provider: the openai SDK's Responses API against OPENAI_BASE_URL (any
// OpenAI-compatible provider), and the provider's failures turned into the friendly messages of
// the `error` event (001 §6). Status and cause go to the logs only.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import OpenAI from 'npm:openai@7.55.0';
import type { AskConfig } from './config.ts';

export type ModelClient = OpenAI;

export function createModelClient(config: AskConfig, apiKey: string): ModelClient {
  return new OpenAI({
    apiKey,
    baseURL: config.openaiBaseUrl,
    maxRetries: config.modelRetries,
    // One model call may not outlive the question's own budget.
    timeout: config.timeLimitMs,
  });
}

/** A model call that failed; `message` is what the user is told. */
export class ProviderFailure extends Error {
  readonly status: number | undefined;
  readonly reason: string;

  constructor(message: string, reason: string, status?: number, cause?: unknown) {
    super(message, { cause });
    this.name = 'ProviderFailure';
    this.reason = reason;
    this.status = status;
  }
}

export const PROVIDER_MESSAGES = {
  rateLimited: 'The AI provider is busy (rate limited). Please try again in a minute.',
  failed: 'The AI provider could not answer just now. Please try again shortly.',
  cutOff: 'The connection to the AI provider was lost before the answer was complete. ' +
    'Please try again.',
  refused: 'The AI provider refused the request. Please rephrase or try again later.',
} as const;

export function providerFailureOf(error: unknown): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const status = error.status;
    const message = status === 429
      ? PROVIDER_MESSAGES.rateLimited
      : status >= 500
      ? PROVIDER_MESSAGES.failed
      : PROVIDER_MESSAGES.refused;
    return new ProviderFailure(message, `provider answered ${status}`, status, error);
  }
  // Connection errors (refused, reset, mid-stream disconnect) and anything else from the SDK.
  return new ProviderFailure(
    PROVIDER_MESSAGES.cutOff,
    'provider connection failed',
    undefined,
    error,
  );
}
