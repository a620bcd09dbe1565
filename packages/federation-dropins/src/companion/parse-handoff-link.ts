// Reads a hand-off link the companion app was opened with (000 §4.2) in any of its three forms:
// the custom scheme, the alias scheme and the universal link. Anything else is refused.
import { isCodeVerifier } from '../partner/federation-handoff.ts';
import { CompanionHandoffError } from './companion-handoff-error.ts';

export interface HandoffLinkConfig {
  /** The app's registered custom scheme and its alias (000 §4.2), e.g. `com.example.companion`. */
  schemes: readonly string[];
  /** `{app_link_base}` of the universal link, e.g. `https://app.example.com`. */
  appLinkBase: string;
}

export interface HandoffLink {
  code: string;
  code_verifier: string;
  form: 'scheme' | 'universal';
}

const HANDOFF_PATH = '/app/auth/federation';
// Codes are opaque (000 §2.3); a bound keeps absurd inputs away from the broker.
const MAX_CODE_LENGTH = 512;

function malformed(reason: string): CompanionHandoffError {
  return new CompanionHandoffError('malformed_link', `Not a hand-off link: ${reason}`);
}

/** Exactly one value for `key`, or undefined; duplicates make the link ambiguous. */
function single(params: URLSearchParams, key: string): string | undefined {
  const values = params.getAll(key);
  if (values.length > 1) throw malformed(`more than one ${key}`);
  return values[0];
}

function isUniversal(url: URL, appLinkBase: string): boolean {
  const base = new URL(appLinkBase);
  const basePath = base.pathname.replace(/\/+$/, '');
  return (
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    url.protocol === base.protocol &&
    url.host === base.host &&
    url.pathname.replace(/\/+$/, '') === `${basePath}${HANDOFF_PATH}`
  );
}

function isCustomScheme(url: URL, schemes: readonly string[]): boolean {
  // `scheme://auth/federation`: WHATWG URL puts `auth` in the host of a non-special scheme.
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  return (
    schemes.some((s) => s.toLowerCase() === scheme) &&
    url.host === 'auth' &&
    url.pathname.replace(/\/+$/, '') === '/federation'
  );
}

/**
 * 000 §4.2: `{app_scheme}://auth/federation?code=<code>#fed_verifier=<code_verifier>`, the alias
 * scheme, or `{app_link_base}/app/auth/federation?code=…#fed_verifier=…`. Returns the code and the
 * verifier; never log the input URL, it holds both.
 */
export function parseHandoffLink(link: string, config: HandoffLinkConfig): HandoffLink {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw malformed('not a URL');
  }
  if (url.username || url.password) throw malformed('credentials in the URL');
  let form: HandoffLink['form'];
  if (isCustomScheme(url, config.schemes)) form = 'scheme';
  else if (isUniversal(url, config.appLinkBase)) form = 'universal';
  else throw malformed('unexpected scheme, host or path');

  // 000 §1 rule 2: the verifier travels only in the fragment. One in the query may have reached a
  // server (web fallback, logs), so the link is refused rather than redeemed.
  if (url.searchParams.has('fed_verifier') || url.searchParams.has('code_verifier')) {
    throw new CompanionHandoffError(
      'verifier_exposed',
      'The verifier was in the query, not the fragment; the link is refused',
    );
  }
  const code = single(url.searchParams, 'code');
  if (!code || code.length > MAX_CODE_LENGTH) throw malformed('missing or oversized code');
  const fragment = new URLSearchParams(url.hash.slice(1));
  const code_verifier = single(fragment, 'fed_verifier');
  if (!code_verifier) throw malformed('missing fed_verifier in the fragment');
  // RFC 7636 §4.1: 43-128 unreserved characters; anything else could never match a challenge.
  if (!isCodeVerifier(code_verifier)) throw malformed('fed_verifier is not an RFC 7636 verifier');
  return { code, code_verifier, form };
}
