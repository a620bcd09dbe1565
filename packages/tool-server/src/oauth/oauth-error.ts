// The one error type of the OAuth endpoints, rendered in one place as RFC 6749 §5.2 JSON
// `{error, error_description}` with `Cache-Control: no-store`. The public code comes from a closed
// set; the internal cause only reaches the logs.

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_token'
  | 'not_found'
  | 'expired'
  | 'already_decided'
  | 'too_many_requests'
  | 'temporarily_unavailable'
  | 'server_error';

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 400,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  invalid_scope: 400,
  invalid_target: 400,
  access_denied: 403,
  invalid_redirect_uri: 400,
  invalid_client_metadata: 400,
  invalid_token: 401,
  not_found: 404,
  expired: 410,
  already_decided: 410,
  too_many_requests: 429,
  temporarily_unavailable: 503,
  server_error: 500,
};

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    code: OAuthErrorCode,
    description: string,
    options: { status?: number; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(description, { cause: options.cause });
    this.name = 'OAuthError';
    this.code = code;
    this.status = options.status ?? STATUS[code];
    this.headers = options.headers ?? {};
  }
}

/** 001 §7: a store outage is 503 temporarily_unavailable with Retry-After: 10. */
export function storeUnavailable(cause?: unknown): OAuthError {
  return new OAuthError(
    'temporarily_unavailable',
    'The authorization server cannot reach its store right now; retry in 10 seconds.',
    { headers: { 'retry-after': '10' }, cause },
  );
}

export function renderOAuthError(error: OAuthError, extraHeaders: Record<string, string> = {}) {
  return new Response(JSON.stringify({ error: error.code, error_description: error.message }), {
    status: error.status,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      pragma: 'no-cache',
      ...extraHeaders,
      ...error.headers,
    },
  });
}
