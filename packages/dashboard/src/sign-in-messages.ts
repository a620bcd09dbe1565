// What the sign-in page tells people when auth says no: one plain sentence per GoTrue error code
// (supabase/auth's public codes), never the raw server message.

/** The part of supabase-js's AuthError the messages depend on. */
export type AuthFailure = { code?: string | undefined; status?: number | undefined };

const MESSAGES: Record<string, string> = {
  invalid_credentials: 'Wrong email or password.',
  email_not_confirmed: 'Confirm your email address first: follow the link we sent you.',
  user_banned: 'This account is suspended. Ask an administrator.',
  email_address_invalid: 'Enter a valid email address.',
  validation_failed: 'Enter your email address and password.',
  over_email_send_rate_limit: 'Too many emails were sent. Wait a minute and try again.',
  over_request_rate_limit: 'Too many attempts. Wait a minute and try again.',
  otp_expired: 'That sign-in link is invalid or has expired. Ask for a new one.',
  flow_state_not_found: 'That sign-in link was already used or has expired. Ask for a new one.',
  flow_state_expired: 'That sign-in link has expired. Ask for a new one.',
};

export type SignInMethod = 'password' | 'magic_link';

/**
 * supabase-js reads `code` only when the browser may see the response's X-Supabase-Api-Version
 * header (GoTrue exposes it to CORS since supabase/auth#1612); behind a gateway that does not,
 * the code is missing and the status of each endpoint's one likely refusal stands in for it.
 */
function codeOf(failure: AuthFailure, method: SignInMethod): string | undefined {
  if (failure.code) return failure.code;
  if (method === 'password' && failure.status === 400) return 'invalid_credentials';
  if (method === 'magic_link' && failure.status === 422) return 'otp_disabled';
  return undefined;
}

/** A sentence for a failed sign-in; unknown failures get a generic one. */
export function describeSignInFailure(failure: AuthFailure, method: SignInMethod): string {
  const code = codeOf(failure, method);
  if (code && MESSAGES[code]) return MESSAGES[code] as string;
  if (failure.status === 429) return MESSAGES.over_request_rate_limit as string;
  // supabase-js reports an unreachable server as status 0 (AuthRetryableFetchError).
  if (failure.status === 0 || failure.status === undefined) {
    return 'The sign-in service cannot be reached. Check your connection and try again.';
  }
  return 'Sign-in failed. Please try again.';
}

/**
 * A magic link for an address without an account is refused (`otp_disabled`, because the page
 * never creates users); the page answers exactly as for a real account, so the form does not
 * tell strangers which addresses have accounts.
 */
export function isSilentMagicLinkRefusal(failure: AuthFailure): boolean {
  const code = codeOf(failure, 'magic_link');
  return code === 'otp_disabled' || code === 'signup_disabled';
}

/**
 * What a followed e-mail link left in the URL when it did not sign anyone in: the auth service's
 * error fragment (`#error=…&error_description=…`), or a PKCE `?code=` still there because this
 * browser could not exchange it (no verifier here, or the code was already used).
 */
export function describeLinkProblem(href: string, signedIn: boolean): string | null {
  const url = new URL(href);
  const fragment = new URLSearchParams(url.hash.slice(1));
  if (fragment.has('error') || fragment.has('error_code')) {
    return 'That sign-in link is invalid or has expired. Ask for a new one.';
  }
  if (!signedIn && url.searchParams.has('code')) {
    return (
      'That sign-in link cannot be used here: it was already used, has expired, or was opened in ' +
      'another browser than the one that asked for it. Ask for a new one.'
    );
  }
  return null;
}
