// The one redirect-URI policy, used by /register, /authorize, /token and metadata documents alike
// (a client registered with a URI must never be refused it later, unless the policy itself
// tightened: /authorize checks it again).
//
// Accepted at registration (001 §2.1, RFC 8252, OAuth 2.1 §2.3):
// - any `https://` URI without userinfo or fragment;
// - `http://` only on loopback: `127.0.0.1`, `[::1]` and `localhost` (RFC 8252 §7.3; `localhost`
//   is NOT RECOMMENDED by §8.3 but is what Claude Code and Cursor register);
// - private-use URI schemes as RFC 8252 §7.1 defines them, a reverse domain name
//   (`com.example.app:/cb`), plus the few editors' schemes in EDITOR_SCHEMES (`cursor://…`,
//   `vscode://…`), because desktop clients register them beside their https/loopback URIs and
//   refusing one fails the whole registration. PKCE S256 binds the code to the client instance
//   that started the flow (RFC 8252 §8.1), so another app claiming the scheme gets a useless code;
//   the consent page names the target. Every other scheme is refused: the browser or the OS
//   would act on it itself (javascript:, file:, search-ms:, ms-officecmd:, shell:, jar:, …).
// Matching is exact string comparison, except that a loopback `http://` URI matches on any port
// (RFC 8252 §7.3); scheme, host, path and query must still be identical.

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Private-use schemes of MCP clients that predate §7.1's reverse-domain rule, by the clients'
 * own registrations: Cursor, VS Code (and Insiders), Windsurf, Zed and Claude's desktop app.
 * Each names one application, never an OS handler; a new client is a new line here.
 */
const EDITOR_SCHEMES = new Set([
  'cursor',
  'vscode',
  'vscode-insiders',
  'windsurf',
  'zed',
  'claude',
]);

/**
 * RFC 8252 §7.1: a reverse domain name, so at least two labels, the first a top-level domain
 * (letters only). OS handlers are single words or hyphenated (`search-ms`, `ms-officecmd`,
 * `x-apple.systempreferences`) and fail it.
 */
const REVERSE_DOMAIN_SCHEME = /^[a-z]{2,63}(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export type RedirectUriProblem = string;

function hasWhitespaceOrControl(value: string): boolean {
  for (let index = 0; index < value.length; index += 1) {
    const code = value.charCodeAt(index);
    if (code <= 0x20 || code === 0x7f || /\s/.test(value[index] as string)) return true;
  }
  return false;
}

/** Why a redirect URI cannot be registered, or undefined when it can. */
export function redirectUriProblem(value: string): RedirectUriProblem | undefined {
  if (value.length > 2_000) return 'is longer than 2000 characters';
  if (hasWhitespaceOrControl(value)) return 'contains whitespace or control characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URI';
  }
  if (value.includes('#')) return 'must not contain a fragment (RFC 6749 §3.1.2)';
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') {
    if (!url.hostname) return 'has no host';
    if (url.username || url.password) return 'must not contain user information';
    return undefined;
  }
  if (scheme === 'http') {
    if (url.username || url.password) return 'must not contain user information';
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : 'uses http on a host that is not loopback (only 127.0.0.1, [::1] and localhost may)';
  }
  if (EDITOR_SCHEMES.has(scheme) || REVERSE_DOMAIN_SCHEME.test(scheme)) return undefined;
  return (
    `uses the scheme ${scheme}:, which is neither https, loopback http, a reverse-domain ` +
    'private-use scheme (RFC 8252 §7.1) nor a known editor scheme'
  );
}

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** Whether `requested` is one of `registered`, under the loopback any-port rule. */
export function matchesRegisteredRedirect(
  requested: string,
  registered: readonly string[],
): boolean {
  if (registered.includes(requested)) return true;
  let asked: URL;
  try {
    asked = new URL(requested);
  } catch {
    return false;
  }
  if (!isLoopbackHttp(asked) || requested.includes('#')) return false;
  return registered.some((candidate) => {
    let known: URL;
    try {
      known = new URL(candidate);
    } catch {
      return false;
    }
    return (
      isLoopbackHttp(known) &&
      known.hostname === asked.hostname &&
      known.pathname === asked.pathname &&
      known.search === asked.search &&
      // URL parsing normalises; the raw strings must still agree apart from the port.
      withoutPort(candidate) === withoutPort(requested)
    );
  });
}

/** Whether `uri` is a loopback `http://` redirect URI (RFC 8252 §7.3), any port. */
export function isLoopbackRedirect(uri: string): boolean {
  if (uri.includes('#') || !URL.canParse(uri)) return false;
  return isLoopbackHttp(new URL(uri));
}

/** The URI with its authority's port removed (loopback http only). */
export function withoutPort(uri: string): string {
  return uri.replace(/^(http:\/\/(?:\[::1\]|127\.0\.0\.1|localhost))(?::\d+)?(?=[/?]|$)/i, '$1');
}

/** What the consent page shows as where the user will be sent (host, or the private scheme). */
export function redirectTarget(uri: string): string {
  const url = new URL(uri);
  return url.host || `${url.protocol}//`;
}
