// Redacts a capture payload (entries.payload, docs/proxy.md "The capture row") or any JSON value
// holding captures (an entries row, a page of rows): a deep copy in which header lists, bodies,
// URLs and query strings are read for what they are, secret-named members are redacted whole
// (containers member by member, keys kept), and every other string is searched as text.
import { isBodyShaped, planBody } from './body.ts';
import { formatWithheld, type RedactionKind } from './kinds.ts';
import { type Context, type Edit, type Plan, planEdits, type ValuePlan } from './plan.ts';
import { classifyMember, classifyName, isCountName, isJwkPrivateMember } from './secret-names.ts';
import { findHeaderValueEdits, planSecretValue } from './secret-values.ts';
import { planString } from './text.ts';

/** Deeper values are withheld: a capture is a few levels deep, JSON bodies are strings. */
export const MAX_DEPTH = 200;

const HEADER_LIST = /^(?:headers|trailers)$|Headers$/;
const URL_MEMBER = /^(?:url|uri|href|location|referr?er)$|(?:Url|URL|Uri|_url|_uri)$/;
const QUERY_MEMBER = /^(?:query|queryString)$/;
const VALUE_MEMBERS = new Set(['value', 'val', 'content']);
const TOO_DEEP = formatWithheld('value nested too deeply');
const CIRCULAR = formatWithheld('circular reference');

export function planCapture(value: unknown, context: Context): ValuePlan {
  return planNode(value, context, 0, undefined, undefined, new Set());
}

/** `kind` is set under a secret-named member; `name` is the member holding the value. */
function planNode(
  value: unknown,
  context: Context,
  depth: number,
  kind: RedactionKind | undefined,
  name: string | undefined,
  ancestors: Set<object>,
): ValuePlan {
  switch (typeof value) {
    case 'string': {
      const plan = kind
        ? planSecretValue(value, kind, context, name)
        : planString(value, 'auto', context, 0);
      return (lookup) => plan.render(lookup);
    }
    case 'number':
    case 'bigint': {
      if (!kind || (name !== undefined && isCountName(name))) return () => value;
      const secret = String(value);
      context.secrets.add(secret);
      return (lookup) => lookup(kind, secret);
    }
    case 'boolean':
    case 'undefined':
      return () => value;
    case 'object':
      break;
    default:
      return () => undefined; // functions and symbols, which JSON drops too
  }
  if (value === null) return () => null;
  if (depth >= MAX_DEPTH) return () => TOO_DEEP;
  if (ancestors.has(value)) return () => CIRCULAR;
  ancestors.add(value);
  try {
    return planObject(value, context, depth, kind, name, ancestors);
  } catch {
    // A getter or proxy that throws: the value is withheld, the rest of the capture is not.
    const withheld = formatWithheld('value');
    return () => withheld;
  } finally {
    ancestors.delete(value);
  }
}

function planObject(
  value: object,
  context: Context,
  depth: number,
  kind: RedactionKind | undefined,
  name: string | undefined,
  ancestors: Set<object>,
): ValuePlan {
  if (Array.isArray(value)) {
    const items = value.map((item) => planNode(item, context, depth + 1, kind, name, ancestors));
    return (lookup) => items.map((render) => render(lookup));
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    return planNode(toJSON.call(value), context, depth + 1, kind, name, ancestors);
  }
  const record = value as Record<string, unknown>;
  const planChild = (member: string, child: unknown, childKind?: RedactionKind) =>
    planNode(child, context, depth + 1, childKind ?? kind, member, ancestors);
  if (!kind && isBodyShaped(record)) return planBody(record, undefined, context, planChild);
  const members = Object.keys(record).map((member): [string, ValuePlan] => [
    member,
    kind
      ? planChild(member, record[member], classifyMember(member, name))
      : planMember(record, member, name, context, planChild),
  ]);
  return (lookup) =>
    Object.fromEntries(members.map(([member, render]) => [member, render(lookup)]));
}

function planMember(
  record: Record<string, unknown>,
  member: string,
  parent: string | undefined,
  context: Context,
  planChild: (member: string, child: unknown, kind?: RedactionKind) => ValuePlan,
): ValuePlan {
  const child = record[member];
  if (HEADER_LIST.test(member) && child !== null && typeof child === 'object') {
    return planHeaders(child, context, planChild);
  }
  if (isRecord(child) && isBodyShaped(child)) {
    const contentType = contentTypeOf(record[headersMemberFor(member)]);
    return planBody(child, contentType, context, planChild);
  }
  // `{"name": "Authorization", "value": "…"}`: HAR headers, form field lists.
  const sibling = record.name;
  const secretName = VALUE_MEMBERS.has(member) && typeof sibling === 'string' &&
      classifyName(sibling)
    ? sibling
    : member;
  const kind = classifyMember(secretName, parent) ??
    (isJwkPrivateMember(member, child) ? 'private-key' : undefined);
  if (kind) return planChild(secretName, child, kind);
  if (typeof child === 'string') {
    const hint = URL_MEMBER.test(member) ? 'url' : QUERY_MEMBER.test(member) ? 'form' : 'auto';
    const plan = planString(child, hint, context, 0);
    return (lookup) => plan.render(lookup);
  }
  return planChild(member, child);
}

/**
 * `[name, value]` pairs (the proxy's wire order), HAR `{name, value}` objects, or
 * `{name: value | value[]}` records: each value is judged by its header's name.
 */
function planHeaders(
  headers: object,
  context: Context,
  planChild: (member: string, child: unknown) => ValuePlan,
): ValuePlan {
  if (Array.isArray(headers)) {
    const items = headers.map((item, index): ValuePlan => {
      if (isNamedValue(item)) {
        const plan = planHeaderValue(item.name, item.value, context);
        const members = Object.keys(item).map((member): [string, ValuePlan] => [
          member,
          member === 'value' ? (lookup) => plan.render(lookup) : planChild(member, item[member]),
        ]);
        return (lookup) =>
          Object.fromEntries(members.map(([member, render]) => [member, render(lookup)]));
      }
      if (!isPair(item)) return planChild(String(index), item);
      const plan = planHeaderValue(item[0], item[1], context);
      return (lookup) => [item[0], plan.render(lookup)];
    });
    return (lookup) => items.map((render) => render(lookup));
  }
  const record = headers as Record<string, unknown>;
  const members = Object.keys(record).map((name): [string, ValuePlan] => {
    const value = record[name];
    if (typeof value === 'string') {
      const plan = planHeaderValue(name, value, context);
      return [name, (lookup) => plan.render(lookup)];
    }
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      const plans = value.map((item: string) => planHeaderValue(name, item, context));
      return [name, (lookup) => plans.map((plan) => plan.render(lookup))];
    }
    return [name, planChild(name, value)];
  });
  return (lookup) => Object.fromEntries(members.map(([name, render]) => [name, render(lookup)]));
}

function planHeaderValue(name: string, value: string, context: Context): Plan {
  const edits: Edit[] = [];
  if (findHeaderValueEdits(name, value, 0, context, edits)) return planEdits(value, edits, context);
  return planString(value, 'auto', context, 0);
}

function headersMemberFor(bodyMember: string): string {
  return bodyMember === 'body' ? 'headers' : bodyMember.replace(/Body$/, 'Headers');
}

function contentTypeOf(headers: unknown): string | undefined {
  if (Array.isArray(headers)) {
    const pair = headers.find((item) => isPair(item) && item[0].toLowerCase() === 'content-type');
    return isPair(pair) ? pair[1] : undefined;
  }
  if (!isRecord(headers)) return undefined;
  const name = Object.keys(headers).find((key) => key.toLowerCase() === 'content-type');
  const value = name === undefined ? undefined : headers[name];
  return typeof value === 'string' ? value : undefined;
}

function isPair(value: unknown): value is [string, string] {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' &&
    typeof value[1] === 'string';
}

function isNamedValue(value: unknown): value is Record<string, unknown> & {
  name: string;
  value: string;
} {
  return isRecord(value) && typeof value.name === 'string' && typeof value.value === 'string';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
