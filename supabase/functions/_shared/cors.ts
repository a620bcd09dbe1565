// CORS for functions called from browsers, as Supabase's functions guide sets it: every response
// carries these headers and the function answers its own OPTIONS preflight. No cookies are used
// (the token travels in Authorization), so `*` lends a page no ambient credential.

export function corsHeaders(methods: readonly string[]): Record<string, string> {
  return {
    'access-control-allow-origin': '*',
    'access-control-allow-headers': 'authorization, x-client-info, apikey, content-type',
    'access-control-allow-methods': [...methods, 'OPTIONS'].join(', '),
  };
}

/** The answer to a preflight (`request.method === 'OPTIONS'`). */
export function preflightResponse(methods: readonly string[]): Response {
  return new Response('ok', {
    status: 200,
    headers: { ...corsHeaders(methods), 'access-control-max-age': '600' },
  });
}
