// The one gate for return paths: where the dashboard may send someone after sign-in. 001 §3: "the
// return path is validated to the consent route only", so no value can become an open redirect.

/** 001 §2.1: the request id is the only thing in the consent URL; the tool server mints it. */
export const RID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

const CONSENT_PATH = /^\/mcp\/consent\?rid=([A-Za-z0-9_-]{16,128})$/;

export const HOME_PATH = '/';

export function isValidRid(rid: unknown): rid is string {
  return typeof rid === 'string' && RID_PATTERN.test(rid);
}

/** The consent route for one authorization request. */
export function consentPath(rid: string): string {
  if (!isValidRid(rid)) throw new Error('not a request id');
  return `/mcp/consent?rid=${rid}`;
}

/**
 * The only accepted values are `/` and `/mcp/consent?rid=<rid>`, compared as whole strings after
 * the one decoding URLSearchParams already did; anything else (other hosts, schemes, encoded
 * slashes, extra parameters, fragments) becomes `/`.
 */
export function validateNextPath(next: unknown): string {
  if (typeof next !== 'string') return HOME_PATH;
  if (next === HOME_PATH || CONSENT_PATH.test(next)) return next;
  return HOME_PATH;
}

/** `/sign-in?next=<validated next>`: where a signed-out visitor goes first. */
export function signInPath(next: unknown): string {
  return `/sign-in?${new URLSearchParams({ next: validateNextPath(next) })}`;
}

/** The `next` a page was given in its query string, validated. */
export function readNextPath(search: string): string {
  return validateNextPath(new URLSearchParams(search).get('next'));
}
