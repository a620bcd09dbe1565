// The auth service's one error type, rendered as GoTrue renders it: with API version 2024-01-01
// (the header supabase-js sends) `{code, message}`, otherwise the legacy `{code, error_code, msg}`;
// both carry `x-sb-error-code` (supabase/auth internal/api/errors.go).

export class AuthError extends Error {
  readonly status: number;
  readonly errorCode: string;
  /** Extra top-level body fields, such as `weak_password: {reasons}`. */
  readonly extra: Record<string, unknown>;
  /** Extra response headers, such as `Retry-After` on a 429. */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    errorCode: string,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AuthError';
    this.status = status;
    this.errorCode = errorCode;
    this.extra = extra;
    this.headers = headers;
  }
}

export const API_VERSION_HEADER = 'X-Supabase-Api-Version';
export const API_VERSION_2024 = '2024-01-01';

/** True when the client asked for the 2024-01-01 error shape (or a later dated version). */
export function wantsVersionedErrors(requestedVersion: string | undefined): boolean {
  return (
    requestedVersion !== undefined &&
    /^\d{4}-\d{2}-\d{2}$/.test(requestedVersion) &&
    requestedVersion >= API_VERSION_2024
  );
}

export function renderAuthError(error: AuthError, requestedVersion: string | undefined): Response {
  const versioned = wantsVersionedErrors(requestedVersion);
  const body = versioned
    ? { code: error.errorCode, message: error.message, ...error.extra }
    : { code: error.status, error_code: error.errorCode, msg: error.message, ...error.extra };
  const headers = new Headers({
    ...error.headers,
    'Content-Type': 'application/json',
    'x-sb-error-code': error.errorCode,
  });
  if (versioned) headers.set(API_VERSION_HEADER, API_VERSION_2024);
  return new Response(JSON.stringify(body), { status: error.status, headers });
}

// Constructors for the errors several routes share; messages are GoTrue's, verbatim.
export const authErrors = {
  noAuthorization: () =>
    new AuthError(401, 'no_authorization', 'This endpoint requires a valid Bearer token'),
  badJwt: (detail: string) => new AuthError(403, 'bad_jwt', `invalid JWT: ${detail}`),
  notAdmin: () => new AuthError(403, 'not_admin', 'User not allowed'),
  sessionNotFound: () =>
    new AuthError(403, 'session_not_found', 'Session from session_id claim in JWT does not exist'),
  userNotFound: () => new AuthError(404, 'user_not_found', 'User not found'),
  validation: (message: string) => new AuthError(400, 'validation_failed', message),
  badJson: () => new AuthError(400, 'bad_json', 'Could not parse request body as JSON'),
  invalidCredentials: () => new AuthError(400, 'invalid_credentials', 'Invalid login credentials'),
  overEmailSendRateLimit: (waitSeconds: number) =>
    new AuthError(
      429,
      'over_email_send_rate_limit',
      `For security purposes, you can only request this after ${waitSeconds} seconds.`,
    ),
  otpExpired: () => new AuthError(403, 'otp_expired', 'Token has expired or is invalid'),
  emailExists: () =>
    new AuthError(
      422,
      'email_exists',
      'A user with this email address has already been registered',
    ),
  /** GoTrue's answer from any of its request limiters; Retry-After (RFC 6585 §4) is ours. */
  overRequestRateLimit: (retryAfterSeconds: number) =>
    new AuthError(
      429,
      'over_request_rate_limit',
      'Request rate limit reached',
      {},
      { 'Retry-After': String(retryAfterSeconds) },
    ),
};
