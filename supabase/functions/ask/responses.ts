// The function's plain JSON answers: one body shape `{error, message}` for every refusal (001 §7:
// 400 bad_request, 401 unauthorized), CORS on all of them, never cached.
import { corsHeaders } from '../_shared/cors.ts';

export const METHODS = ['POST'] as const;

export type AskErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'method_not_allowed'
  | 'not_found'
  | 'forbidden'
  | 'dashboard_session_required'
  | 'already_applied'
  | 'rate_limited'
  | 'not_configured'
  | 'provider_error'
  | 'unavailable'
  | 'internal_error';

export function jsonResponse(
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      ...corsHeaders(METHODS),
      'content-type': 'application/json',
      'cache-control': 'no-store',
      ...extra,
    },
  });
}

export function errorResponse(
  status: number,
  error: AskErrorCode,
  message: string,
  extra: Record<string, string> = {},
): Response {
  const headers = { ...extra };
  // RFC 6750 §3: a refused bearer token gets a challenge.
  if (error === 'unauthorized') headers['www-authenticate'] = 'Bearer error="invalid_token"';
  return jsonResponse(status, { error, message }, headers);
}

export const NOT_CONFIGURED =
  'The assistant is not configured on this server: no model provider key (OPENAI_API_KEY) is set.';
