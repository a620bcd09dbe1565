// The tool server's consent API as the consent page calls it: read one pending authorization
// request, then approve or deny it. Authenticated only by the session's bearer token, never by
// cookies, so a cross-site form cannot forge a decision.

export type ConsentRole = { slug: string; name: string; is_admin: boolean };

export type AuthorizationDetails = {
  authorization_id: string;
  client: {
    client_id: string;
    name: string | null;
    uri: string | null;
    logo_uri: string | null;
  };
  redirect_uri: string;
  redirect_host: string;
  scope: string;
  scope_description: string;
  resource: string;
  user: { id: string; email: string | null; role: ConsentRole | null };
  expires_at: string;
};

export type ConsentDecision = 'approve' | 'deny';

/** Closed set; the page branches on it. `unavailable` is worth retrying, the rest are not. */
export type ConsentErrorCode =
  | 'invalid_token'
  | 'not_found'
  | 'expired'
  | 'already_decided'
  | 'unavailable'
  | 'server_error';

export class ConsentApiError extends Error {
  readonly code: ConsentErrorCode;
  readonly status: number;

  constructor(code: ConsentErrorCode, status: number, message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'ConsentApiError';
    this.code = code;
    this.status = status;
  }
}

export type ConsentApiOptions = {
  mcpUrl: string;
  rid: string;
  accessToken: string;
  fetch?: typeof fetch;
};

function authorizationUrl(mcpUrl: string, rid: string): string {
  return `${mcpUrl.replace(/\/+$/, '')}/oauth/authorizations/${encodeURIComponent(rid)}`;
}

/** The server's `{error, error_description}` mapped onto the closed set by status first. */
function errorFromBody(status: number, body: unknown): ConsentApiError {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const error = typeof fields.error === 'string' ? fields.error : '';
  const description =
    typeof fields.error_description === 'string' ? fields.error_description : `HTTP ${status}`;
  let code: ConsentErrorCode = 'server_error';
  if (status === 401) code = 'invalid_token';
  else if (status === 404) code = 'not_found';
  else if (status === 410) code = error === 'already_decided' ? 'already_decided' : 'expired';
  else if (status === 503) code = 'unavailable';
  return new ConsentApiError(code, status, description);
}

async function callConsentApi(
  options: ConsentApiOptions,
  url: string,
  init: RequestInit,
): Promise<unknown> {
  const doFetch = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(url, {
      ...init,
      headers: { ...init.headers, Authorization: `Bearer ${options.accessToken}` },
      // No cookies and no referrer: the bearer token is the only credential.
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      cache: 'no-store',
    });
  } catch (cause) {
    throw new ConsentApiError('unavailable', 0, 'The tool server could not be reached', cause);
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch (cause) {
    if (response.ok) {
      throw new ConsentApiError('server_error', response.status, 'Response is not JSON', cause);
    }
  }
  if (!response.ok) throw errorFromBody(response.status, body);
  return body;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isNullableString = (value: unknown) => value === null || isString(value);

function isRole(value: unknown): value is ConsentRole | null {
  if (value === null) return true;
  if (typeof value !== 'object') return false;
  const role = value as Record<string, unknown>;
  return isString(role.slug) && isString(role.name) && typeof role.is_admin === 'boolean';
}

/** Checks the fields the page shows; a malformed answer is the server's fault. */
function readAuthorizationDetails(body: unknown): AuthorizationDetails {
  const details = body as AuthorizationDetails | null;
  const valid =
    typeof details === 'object' &&
    details !== null &&
    isString(details.authorization_id) &&
    typeof details.client === 'object' &&
    details.client !== null &&
    isString(details.client.client_id) &&
    isNullableString(details.client.name) &&
    isString(details.redirect_host) &&
    isString(details.scope_description) &&
    typeof details.user === 'object' &&
    details.user !== null &&
    isNullableString(details.user.email) &&
    isRole(details.user.role);
  if (!valid) throw new ConsentApiError('server_error', 200, 'Malformed authorization request');
  return details;
}

/**
 * Schemes the browser would handle itself instead of handing the answer to the client. The tool
 * server accepts https, loopback http and private-use schemes of native clients (`cursor://`,
 * RFC 8252 §7.1) and refuses these same ones at registration; this is the second lock, should a
 * redirect_url ever come back as `javascript:` or `data:`.
 */
const LOCAL_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'blob:',
  'about:',
  'vbscript:',
  'filesystem:',
  'view-source:',
  'chrome:',
  'chrome-extension:',
  'ws:',
  'wss:',
  'ftp:',
  'mailto:',
  'tel:',
  'sms:',
  'intent:',
]);

/** An absolute URL (parsed as the browser will) whose scheme leaves this browser. */
export function isFollowableRedirect(value: string): boolean {
  return URL.canParse(value) && !LOCAL_SCHEMES.has(new URL(value).protocol);
}

/** GET {mcp_url}/oauth/authorizations/<rid>: what the consent page shows. */
export async function fetchAuthorization(
  options: ConsentApiOptions,
): Promise<AuthorizationDetails> {
  const body = await callConsentApi(options, authorizationUrl(options.mcpUrl, options.rid), {
    method: 'GET',
    headers: { Accept: 'application/json' },
  });
  return readAuthorizationDetails(body);
}

/**
 * POST {mcp_url}/oauth/authorizations/<rid>/consent: 001 §3, Allow issues the code, Deny sends
 * `access_denied`; either way the answer is where to send the browser next.
 */
export async function decideAuthorization(
  options: ConsentApiOptions & { action: ConsentDecision },
): Promise<{ redirect_url: string }> {
  const url = `${authorizationUrl(options.mcpUrl, options.rid)}/consent`;
  const body = (await callConsentApi(options, url, {
    method: 'POST',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify({ action: options.action }),
  })) as { redirect_url?: unknown } | null;
  const redirectUrl = body?.redirect_url;
  if (!isString(redirectUrl) || !isFollowableRedirect(redirectUrl)) {
    throw new ConsentApiError('server_error', 200, 'Malformed redirect_url');
  }
  return { redirect_url: redirectUrl };
}
