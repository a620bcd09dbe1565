// POST /functions/v1/ask (001 §4.3) and POST /functions/v1/ask/confirm: the caller is resolved
// from the bearer token (001 §5.4; 401 unauthorized for missing, expired, invalid or revoked
// tokens), the request validated (400 bad_request), the per-user rate limit taken, then the
// answer given as SSE (`Accept: text/event-stream`, 001 §6) or blocking JSON {answer}.
import { type CallerEnv, resolveCaller } from '../_shared/caller.ts';
import { corsHeaders, preflightResponse } from '../_shared/cors.ts';
import { createRedactor } from '../_shared/redaction.ts';
import { type AskOutcome, runAsk } from './ask-run.ts';
import type { AskConfig } from './config.ts';
import { confirmationOf, confirmWrite } from './confirm-handler.ts';
import { createCallerClient, type DataError } from './data-api.ts';
import { type AskEvent, createEventStream, SSE_HEADERS } from './event-stream.ts';
import { logEvent } from './log.ts';
import { createModelClient, type ModelClient } from './model.ts';
import { BadRequest, parseAskRequest, readJsonBody } from './request.ts';
import { errorResponse, METHODS, NOT_CONFIGURED } from './responses.ts';

export interface AskDeps {
  config: AskConfig;
  /** The fetch PostgREST is called with (unit tests pass a stub). */
  fetch?: typeof fetch;
  createModel?: (config: AskConfig, apiKey: string) => ModelClient;
}

/** {base_url}/functions/v1/ask (SUPABASE_URL is {base_url}), for confirm_url in artifacts. */
function askUrlOf(config: AskConfig): string {
  return `${config.supabaseUrl}/functions/v1/ask`;
}

function wantsStream(request: Request): boolean {
  return (request.headers.get('accept') ?? '').toLowerCase().includes('text/event-stream');
}

export async function handleAsk(request: Request, deps: AskDeps): Promise<Response> {
  if (request.method === 'OPTIONS') return preflightResponse(METHODS);
  const path = new URL(request.url).pathname.replace(/\/+$/, '');
  const confirming = path.endsWith('/confirm');
  if (request.method !== 'POST') {
    return errorResponse(405, 'method_not_allowed', 'Use POST.', { allow: 'POST, OPTIONS' });
  }
  const callerEnv: CallerEnv = { supabaseUrl: deps.config.supabaseUrl, fetch: deps.fetch };
  const resolution = await resolveCaller(request, callerEnv);
  if (!resolution.ok) {
    const { error } = resolution;
    logEvent('caller_refused', { code: error.code, reason: error.reason });
    return error.code === 'unauthorized'
      ? errorResponse(401, 'unauthorized', error.message)
      : errorResponse(503, 'unavailable', error.message, { 'retry-after': '5' });
  }
  const { caller, accessToken } = resolution;
  let body: unknown;
  try {
    body = await readJsonBody(request);
  } catch (error) {
    if (error instanceof BadRequest) return errorResponse(400, 'bad_request', error.message);
    throw error;
  }
  const controller = new AbortController();
  const abort = () => controller.abort();
  request.signal.addEventListener('abort', abort, { once: true });
  const db = createCallerClient(
    deps.config.supabaseUrl,
    accessToken,
    controller.signal,
    deps.fetch,
  );

  if (confirming) {
    try {
      return await confirmWrite(caller, confirmationOf(body), db);
    } catch (error) {
      if (error instanceof BadRequest) return errorResponse(400, 'bad_request', error.message);
      throw error;
    }
  }

  let askRequest;
  try {
    askRequest = parseAskRequest(body);
  } catch (error) {
    if (error instanceof BadRequest) return errorResponse(400, 'bad_request', error.message);
    throw error;
  }

  // Configuration first: a question the assistant cannot answer must not spend one of the
  // user's turns (the rate limit counts questions asked of the model).
  const apiKey = deps.config.openaiApiKey;
  const stream = wantsStream(request);
  if (!apiKey) {
    logEvent('not_configured');
    if (!stream) return errorResponse(503, 'not_configured', NOT_CONFIGURED);
    const events = createEventStream(deps.config.pingMs, abort);
    events.send({ event: 'error', data: { message: NOT_CONFIGURED } });
    events.close();
    return new Response(events.body, { headers: { ...corsHeaders(METHODS), ...SSE_HEADERS } });
  }

  const turn = await db.rpc('assistant_take_turn', { per_minute: deps.config.ratePerMinute });
  if (turn.error) {
    const error = turn.error as DataError;
    if (error.code === 'PT429') {
      return errorResponse(429, 'rate_limited', 'Too many questions; try again in a minute.', {
        'retry-after': '60',
      });
    }
    logEvent('rate_limit_unavailable', { code: error.code });
    return errorResponse(503, 'unavailable', 'The assistant is unavailable just now.', {
      'retry-after': '5',
    });
  }

  const deadline = AbortSignal.timeout(deps.config.timeLimitMs);
  deadline.addEventListener('abort', abort, { once: true });
  const started = Date.now();
  const run = (emit: (event: AskEvent) => void) =>
    runAsk({
      config: deps.config,
      caller,
      request: askRequest,
      db,
      model: (deps.createModel ?? createModelClient)(deps.config, apiKey),
      redactor: createRedactor({ key: deps.config.redactionKey }),
      signal: controller.signal,
      emit,
      askUrl: askUrlOf(deps.config),
    });
  const finish = (outcome: AskOutcome) => {
    logEvent('answered', {
      user: caller.user_id,
      ok: outcome.ok,
      code: outcome.ok ? undefined : outcome.code,
      reason: !outcome.ok && outcome.code === 'provider_error' ? outcome.reason : undefined,
      steps: outcome.ok ? outcome.steps : undefined,
      agent: outcome.ok ? outcome.agent : undefined,
      timed_out: deadline.aborted,
      ms: Date.now() - started,
    });
  };
  const timeoutMessage =
    'The question took longer than the assistant may spend on one; ask something narrower.';

  if (!stream) {
    let outcome: AskOutcome;
    try {
      outcome = await run(() => {});
    } catch (error) {
      // runAsk answers an abort as an outcome; anything thrown is unexpected. After an abort it
      // is still the time cap's (or the departed client's) answer, never a bare 500.
      logEvent('ask_failed', { error: String(error) });
      if (!controller.signal.aborted) {
        return errorResponse(500, 'internal_error', 'The assistant failed unexpectedly.');
      }
      outcome = { ok: false, code: 'aborted' };
    }
    finish(outcome);
    if (outcome.ok) {
      return new Response(JSON.stringify({ answer: outcome.answer }), {
        headers: {
          ...corsHeaders(METHODS),
          'content-type': 'application/json',
          'cache-control': 'no-store',
        },
      });
    }
    if (outcome.code === 'provider_error') {
      return errorResponse(502, 'provider_error', outcome.message);
    }
    return errorResponse(504, 'unavailable', timeoutMessage);
  }

  const events = createEventStream(deps.config.pingMs, abort);
  // B3: headers and a first event at once (the edge runtime's idle timeout, and the user sees
  // that the question was taken).
  events.send({ event: 'tool', data: { label: 'Thinking' } });
  run((event) => {
    if (!controller.signal.aborted) events.send(event);
  })
    .then((outcome) => {
      finish(outcome);
      if (outcome.ok) {
        events.send({ event: 'done', data: { answer: outcome.answer } });
      } else if (outcome.code === 'provider_error') {
        events.send({ event: 'error', data: { message: outcome.message } });
      } else if (deadline.aborted && !request.signal.aborted) {
        // The time cap, not the client: the client is still there to be told.
        events.send({ event: 'error', data: { message: timeoutMessage } });
      }
    })
    .catch((error: unknown) => {
      logEvent('ask_failed', { error: String(error) });
      if (!controller.signal.aborted) {
        events.send({ event: 'error', data: { message: 'The assistant failed unexpectedly.' } });
      }
    })
    .finally(() => events.close());
  return new Response(events.body, { headers: { ...corsHeaders(METHODS), ...SSE_HEADERS } });
}
