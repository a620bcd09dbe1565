// The page /authorize shows when it must not redirect (unknown client, unregistered redirect URI:
// RFC 6749 §4.1.2.1 forbids sending the user to an unverified URI) or cannot (store outage). A
// browser gets a short HTML page; anything else gets the same error as JSON.
import type { OAuthError } from '../oauth/oauth-error.ts';
import { renderOAuthError } from '../oauth/oauth-error.ts';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

export function renderErrorPage(error: OAuthError, accept: string | undefined): Response {
  if (!accept?.includes('text/html')) return renderOAuthError(error);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign-in request refused</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">
<h1>This sign-in request cannot continue</h1>
<p>${escapeHtml(error.message)}</p>
<p><code>${escapeHtml(error.code)}</code></p>
<p>Go back to the application and start the sign-in again.</p>
</body></html>`;
  return new Response(html, {
    status: error.status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      ...error.headers,
    },
  });
}
