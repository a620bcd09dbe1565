// Headers on every response of the dashboard server. The consent page must never be framed
// (clickjacking an Allow click) and never leak its URL, which carries the request id.
import type { DashboardRuntimeConfig } from '../src/runtime-config.ts';

/** http(s) origin plus its WebSocket twin: supabase-js opens Realtime on ws(s)://. */
function originWithWebSocket(url: string): string[] {
  const { origin, protocol } = new URL(url);
  const socket = `${protocol === 'https:' ? 'wss:' : 'ws:'}${origin.slice(protocol.length)}`;
  return [origin, socket];
}

/**
 * default-src 'self' and nothing inline: the app is one hashed script and one stylesheet. The
 * browser may talk to this origin, the Supabase API (REST, auth, Realtime) and the tool server's
 * consent API, and to nothing else.
 */
export function buildContentSecurityPolicy(config: DashboardRuntimeConfig): string {
  const connect = new Set(["'self'", ...originWithWebSocket(config.supabaseUrl)]);
  connect.add(new URL(config.mcpUrl).origin);
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "font-src 'self'",
    `connect-src ${[...connect].join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function buildSecurityHeaders(config: DashboardRuntimeConfig): Record<string, string> {
  return {
    'Content-Security-Policy': buildContentSecurityPolicy(config),
    // For browsers that predate frame-ancestors.
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    // No window this app opens, or that opens it, may script it.
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
}
