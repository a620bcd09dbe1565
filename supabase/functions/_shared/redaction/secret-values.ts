// Values that are secret because of where they sit (a secret-named header, key or field): the
// whole value becomes one placeholder, but an authorization scheme (`Bearer`), cookie names and
// Set-Cookie attributes stay readable, since they are not secret and say what was sent.
import { isPlaceholderOnly, type RedactionKind } from './kinds.ts';
import { type Context, type Edit, type Plan, planEdits, secretEdit } from './plan.ts';
import { classifyHeaderName, classifyName } from './secret-names.ts';
import { detectFormat, isPublishableKey } from './token-formats.ts';

/** RFC 9110 §11.4 credentials schemes in use (IANA registry and common vendor schemes). */
const AUTH_SCHEMES = new Set([
  'apikey',
  'api-key',
  'aws4-hmac-sha256',
  'basic',
  'bearer',
  'bot',
  'digest',
  'dpop',
  'geniekey',
  'hawk',
  'key',
  'mac',
  'negotiate',
  'ntlm',
  'oauth',
  'sharedkey',
  'sharedaccesssignature',
  'splunk',
  'sso-key',
  'ssws',
  'token',
]);

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/** Edits that redact `value` (found at `offset` of the text) as one secret of `kind`. */
export function findSecretValueEdits(
  value: string,
  offset: number,
  kind: RedactionKind,
  context: Context,
  edits: Edit[],
): void {
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start += 1;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end -= 1;
  if (end - start >= 2 && value[start] === '"' && value[end - 1] === '"') {
    start += 1;
    end -= 1;
  }
  if (start === end) return;
  const inner = value.slice(start, end);
  if (isPlaceholderOnly(inner) || isPublishableKey(inner)) return;
  const scheme = /^([A-Za-z][A-Za-z0-9-]*)[ \t]+(?=\S)/.exec(inner);
  const schemeName = scheme?.[1]?.toLowerCase();
  if (scheme && schemeName && AUTH_SCHEMES.has(schemeName)) {
    const credential = inner.slice(scheme[0].length);
    if (isPlaceholderOnly(credential) || isPublishableKey(credential)) return;
    const credentialKind: RedactionKind = schemeName === 'basic'
      ? 'basic-auth'
      : detectFormat(credential) ?? (schemeName === 'bearer' ? 'bearer' : kind);
    const credentialStart = offset + start + scheme[0].length;
    edits.push(secretEdit(context, credentialStart, offset + end, credentialKind, credential));
    return;
  }
  edits.push(secretEdit(context, offset + start, offset + end, detectFormat(inner) ?? kind, inner));
}

/**
 * Edits for a header value when the header is secret by name; false when it is not (then the
 * value is only scanned as text). Cookie names and Set-Cookie attributes are kept.
 */
export function findHeaderValueEdits(
  name: string,
  value: string,
  offset: number,
  context: Context,
  edits: Edit[],
): boolean {
  const kind = classifyHeaderName(name.trim());
  if (kind === 'cookie' && name.trim().toLowerCase() === 'cookie') {
    findCookieEdits(value, offset, 'cookie', false, context, edits);
  } else if (kind === 'set-cookie') {
    findCookieEdits(value, offset, 'set-cookie', true, context, edits);
  } else if (kind) {
    findSecretValueEdits(value, offset, kind, context, edits);
  } else {
    return false;
  }
  return true;
}

/**
 * RFC 6265 §4.2 `Cookie: a=1; b=2` (every value redacted) and §4.1 `Set-Cookie: a=1; Path=/`
 * (only the first pair holds a value; the attributes are kept).
 */
function findCookieEdits(
  header: string,
  offset: number,
  kind: RedactionKind,
  firstPairOnly: boolean,
  context: Context,
  edits: Edit[],
): void {
  let start = 0;
  while (start <= header.length) {
    let end = header.indexOf(';', start);
    if (end === -1) end = header.length;
    const equals = header.indexOf('=', start);
    const valueStart = equals !== -1 && equals < end ? equals + 1 : start;
    findSecretValueEdits(header.slice(valueStart, end), offset + valueStart, kind, context, edits);
    if (firstPairOnly) return;
    start = end + 1;
  }
}

/**
 * The plan for a value that is secret because of `name` (a header, key or field name, which
 * also decides whether cookie names are kept) or, without a name, because of where it sits.
 */
export function planSecretValue(
  value: string,
  kind: RedactionKind,
  context: Context,
  name?: string,
): Plan {
  const edits: Edit[] = [];
  // Only the name rule here: `name` may be a JSON key or a form field, not a header.
  if (
    name === undefined || classifyName(name.trim()) === undefined ||
    !findHeaderValueEdits(name, value, 0, context, edits)
  ) {
    findSecretValueEdits(value, 0, kind, context, edits);
  }
  return planEdits(value, edits, context);
}
