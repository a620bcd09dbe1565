// The one scope this server grants. 001 §5.2: the consent page names the scope as full dashboard
// access; the token then does on every surface exactly what the user's role allows (RLS decides,
// not the scope). Requested scopes we do not know (`openid email profile`, `offline_access`) are
// ignored rather than refused: RFC 6749 §3.3 lets the server grant a different scope, and the
// token response then names what was granted; real MCP clients send such lists.

export const DASHBOARD_SCOPE = 'dashboard';
export const SCOPE_DESCRIPTION =
  'Full dashboard access: everything your role allows you to see and change, through the tools, ' +
  'the REST API, Realtime and the assistant.';
