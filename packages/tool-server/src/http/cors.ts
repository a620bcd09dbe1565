// CORS for the two kinds of routes. Public OAuth routes (discovery, registration, token,
// revocation) are called by browser-based MCP clients with bearer tokens (never cookies), so any
// origin may read them. The MCP endpoint answers only the origins its Origin check serves (ours
// and the dashboard's; MCP transports 2025-11-25), so a preflight never invites a request that
// the check then refuses; the dashboard's routes (consent, grants, session exchange) answer only
// the dashboard's origin. Both expose WWW-Authenticate, so a client can find the resource
// metadata after a 401.

const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'mcp-protocol-version',
  'mcp-session-id',
  'mcp-method',
  'mcp-name',
  'last-event-id',
].join(', ');
const EXPOSED_HEADERS = 'www-authenticate, mcp-session-id, mcp-protocol-version, retry-after';

export type CorsPolicy = { kind: 'public' } | { kind: 'listed'; origins: readonly string[] };

export function corsHeaders(
  policy: CorsPolicy,
  requestOrigin: string | undefined,
): Record<string, string> {
  if (policy.kind === 'public') {
    return {
      'access-control-allow-origin': '*',
      'access-control-expose-headers': EXPOSED_HEADERS,
    };
  }
  if (!requestOrigin || !policy.origins.includes(requestOrigin)) return { vary: 'origin' };
  return {
    'access-control-allow-origin': requestOrigin,
    'access-control-expose-headers': EXPOSED_HEADERS,
    vary: 'origin',
  };
}

export function preflightResponse(policy: CorsPolicy, requestOrigin: string | undefined): Response {
  const base = corsHeaders(policy, requestOrigin);
  if (!base['access-control-allow-origin'])
    return new Response(null, { status: 204, headers: base });
  return new Response(null, {
    status: 204,
    headers: {
      ...base,
      'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': '600',
    },
  });
}
