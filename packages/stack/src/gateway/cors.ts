// CORS as the Supabase CLI's gateway sends it (Kong's cors plugin with its defaults): a preflight
// to REST, auth or realtime is answered by the gateway itself (one to an edge function goes to the
// function); every other response gets `Access-Control-Allow-Origin: *`.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';

const ALLOWED_METHODS = 'GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT';

export function isPreflight(request: IncomingMessage): boolean {
  return (
    request.method === 'OPTIONS' &&
    request.headers.origin !== undefined &&
    request.headers['access-control-request-method'] !== undefined
  );
}

export function preflightHeaders(request: IncomingMessage): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': ALLOWED_METHODS,
    'content-length': '0',
  };
  const requested = request.headers['access-control-request-headers'];
  if (requested) headers['access-control-allow-headers'] = requested;
  return headers;
}
