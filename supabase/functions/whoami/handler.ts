// GET or POST /functions/v1/whoami: the caller as whoami() resolves them (001 §5.4), so a client
// can see who its token speaks for. 401 {error: 'unauthorized'} for a token PostgREST refuses
// (missing, expired, revoked), 503 when the check cannot be made; CORS on every answer.
import { type CallerEnv, type CallerError, resolveCaller } from '../_shared/caller.ts';
import { corsHeaders, preflightResponse } from '../_shared/cors.ts';
import { logEvent } from './log.ts';

const METHODS = ['GET', 'POST'] as const;

function jsonResponse(status: number, body: unknown, extra: Record<string, string> = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      ...corsHeaders(METHODS),
      'content-type': 'application/json',
      // The answer is about whoever holds the token: never cached.
      'cache-control': 'no-store',
      ...extra,
    },
  });
}

function errorResponse(error: CallerError): Response {
  const extra: Record<string, string> = {};
  // RFC 6750 §3: a refused bearer token gets a challenge.
  if (error.code === 'unauthorized') extra['www-authenticate'] = 'Bearer error="invalid_token"';
  if (error.code === 'unavailable') extra['retry-after'] = '5';
  return jsonResponse(error.status, { error: error.code, message: error.message }, extra);
}

export async function handleWhoami(request: Request, env: CallerEnv): Promise<Response> {
  if (request.method === 'OPTIONS') return preflightResponse(METHODS);
  if (!(METHODS as readonly string[]).includes(request.method)) {
    return jsonResponse(
      405,
      { error: 'method_not_allowed', message: 'Use GET or POST.' },
      { allow: 'GET, POST, OPTIONS' },
    );
  }
  const resolution = await resolveCaller(request, env);
  if (!resolution.ok) {
    const { error } = resolution;
    logEvent('caller_refused', {
      code: error.code,
      reason: error.reason,
      cause: error.cause === undefined ? undefined : String(error.cause),
    });
    return errorResponse(error);
  }
  return jsonResponse(200, resolution.caller);
}
