// Secrets in URLs and in `application/x-www-form-urlencoded` text (bodies and query strings):
// fields are decoded before they are judged and fingerprinted, so a token fingerprints the same
// in a query, a form, a header or JSON. Values under secret names are redacted; the others are
// read as text (a redirect URL inside a field is searched too) and re-encoded only if changed.
import { inspectorOf } from './base64-runs.ts';
import { findTextEdits, type RunDecoding } from './free-text.ts';
import type { NestedPlanner } from './json-text.ts';
import { PLACEHOLDER_PATTERN, type RedactionKind } from './kinds.ts';
import { type Context, type Edit, nestedEdit, type Plan, planEdits } from './plan.ts';
import { classifyName } from './secret-names.ts';
import { planSecretValue } from './secret-values.ts';

export function planForm(
  text: string,
  context: Context,
  depth: number,
  nested: NestedPlanner,
): Plan {
  const edits: Edit[] = [];
  findFormEdits(text, 0, text.length, context, depth, nested, edits);
  return planEdits(text, edits, context);
}

/**
 * RFC 3986 §3: the scheme, authority and path are read as text (a password in the userinfo,
 * a token in the path), the query as a form, the fragment as a form when it holds fields
 * (OAuth implicit responses put `access_token` there).
 */
export function planUrl(
  text: string,
  context: Context,
  depth: number,
  nested: NestedPlanner,
): Plan {
  const edits: Edit[] = [];
  const decoding: RunDecoding = { inspect: inspectorOf(context, nested, depth), percent: true };
  const hash = text.indexOf('#');
  const end = hash === -1 ? text.length : hash;
  const question = text.indexOf('?');
  const queryStart = question !== -1 && question < end ? question : -1;
  findTextEdits(text, 0, queryStart === -1 ? end : queryStart, context, edits, decoding);
  if (queryStart !== -1) findFormEdits(text, queryStart + 1, end, context, depth, nested, edits);
  if (hash !== -1) {
    if (text.includes('=', hash)) {
      findFormEdits(text, hash + 1, text.length, context, depth, nested, edits);
    } else findTextEdits(text, hash + 1, text.length, context, edits, decoding);
  }
  return planEdits(text, edits, context);
}

function findFormEdits(
  text: string,
  from: number,
  to: number,
  context: Context,
  depth: number,
  nested: NestedPlanner,
  edits: Edit[],
): void {
  const fields: { start: number; equals: number; end: number; name: string }[] = [];
  for (let start = from; start <= to;) {
    let end = text.indexOf('&', start);
    if (end === -1 || end > to) end = to;
    const equals = text.indexOf('=', start);
    const hasValue = equals !== -1 && equals < end;
    fields.push({
      start,
      equals: hasValue ? equals : -1,
      end,
      name: hasValue ? decodeField(text.slice(start, equals)) : '',
    });
    start = end + 1;
  }
  // RFC 6749 §4.1.2: `code` next to `state` is an authorization code, a short-lived credential.
  const hasState = fields.some((field) => field.name === 'state');
  for (const field of fields) {
    const valueStart = field.equals === -1 ? field.start : field.equals + 1;
    const raw = text.slice(valueStart, field.end);
    const value = decodeField(raw);
    if (value.length === 0) continue;
    const kind: RedactionKind | undefined = field.equals === -1
      ? undefined
      : classifyName(field.name) ?? (field.name === 'code' && hasState ? 'token' : undefined);
    const plan = kind
      ? planSecretValue(value, kind, context, field.name)
      : nested(value, 'auto', depth + 1);
    if (!plan.changed) continue;
    edits.push(nestedEdit(valueStart, field.end, plan, raw === value ? undefined : encodeField));
  }
}

/** `+` is a space, then percent-decoding; text that does not decode is taken as it is. */
function decodeField(raw: string): string {
  const spaced = raw.includes('+') ? raw.replace(/\+/g, ' ') : raw;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** Percent-encodes a redacted field but leaves its placeholders readable. */
function encodeField(rendered: string): string {
  let out = '';
  let at = 0;
  PLACEHOLDER_PATTERN.lastIndex = 0;
  for (
    let match = PLACEHOLDER_PATTERN.exec(rendered);
    match;
    match = PLACEHOLDER_PATTERN.exec(rendered)
  ) {
    out += encodeURIComponent(rendered.slice(at, match.index).toWellFormed()) + match[0];
    at = match.index + match[0].length;
  }
  return out + encodeURIComponent(rendered.slice(at).toWellFormed());
}
