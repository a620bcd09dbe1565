// Every response the broker sends, errors included, carries the same protective headers:
// no caching of codes or tokens (RFC 9700 §4.2; RFC 6749 §5.1) and no Referer leak.
import type { BrokerError } from './broker-error.ts';

const PROTECTIVE_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  // The web drop-in calls /start from a partner page; no cookies are used, so `*` grants nothing.
  'access-control-allow-origin': '*',
};

export function jsonResponse(
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...PROTECTIVE_HEADERS, 'content-type': 'application/json', ...extra },
  });
}

/** The one error body: {"error": code, "error_description": message} (OAuth's shape). */
export function errorResponse(error: BrokerError): Response {
  const extra: Record<string, string> = {};
  if (error.code === 'rate_limited') extra['retry-after'] = '60';
  if (error.code === 'method_not_allowed') extra.allow = 'POST, OPTIONS';
  return jsonResponse(error.status, { error: error.code, error_description: error.message }, extra);
}

export function preflightResponse(): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...PROTECTIVE_HEADERS,
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': 'authorization, content-type, apikey, x-client-info',
      'access-control-max-age': '600',
    },
  });
}
