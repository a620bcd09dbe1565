// Secrets in JSON text, found by a tolerant scanner rather than JSON.parse: the original text is
// kept byte for byte outside the edits (big numbers, key order, spacing), a body cut by the
// proxy's cap is still read up to the cut, and NDJSON is read value after value. A value under
// a secret-named key is redacted (inside objects and arrays too, keys kept); every other string
// is read again as text, so JSON inside a JSON string is handled at any depth.
import type { TextHint } from './content-types.ts';
import type { RedactionKind } from './kinds.ts';
import { type Context, type Edit, nestedEdit, type Plan, secretEdit } from './plan.ts';
import { classifyMember, classifyName, isCountName, isJwkPrivateMember } from './secret-names.ts';
import { planSecretValue } from './secret-values.ts';

/** Plans a string found inside another one (a JSON string, a form value, a multipart part). */
export type NestedPlanner = (text: string, hint: TextHint, depth: number) => Plan;

interface Frame {
  readonly object: boolean;
  /** Set inside a container under a secret-named key: every scalar in it is secret. */
  readonly inherited: RedactionKind | undefined;
  /** The key this container is the value of. */
  readonly parent: string | undefined;
  expectKey: boolean;
  key: string | undefined;
  /** Set by `"name": "<secret name>"`: the sibling `value` is secret (HAR, form field lists). */
  valueName: string | undefined;
}

const NAME_MEMBERS = new Set(['name', 'key', 'field', 'param', 'parameter', 'header']);
const VALUE_MEMBERS = new Set(['value', 'val', 'content']);
const LITERAL = /[A-Za-z0-9+.-]+/y;

/**
 * Adds edits for the JSON values starting at `from` (a `{` or `[`); returns where the JSON
 * ended or stopped making sense, so the caller can read the rest as text.
 */
export function findJsonEdits(
  text: string,
  from: number,
  context: Context,
  depth: number,
  nested: NestedPlanner,
  edits: Edit[],
): number {
  const stack: Frame[] = [];
  let at = from;
  while (at < text.length) {
    const char = text[at] ?? '';
    if (char === ' ' || char === '\n' || char === '\r' || char === '\t') {
      at += 1;
      continue;
    }
    const frame = stack.at(-1);
    if (!frame) {
      if (char !== '{' && char !== '[') return at;
      stack.push(openFrame(char === '{', undefined, undefined));
      at += 1;
      continue;
    }
    if (char === '{' || char === '[') {
      stack.push(openFrame(char === '{', memberKind(frame, undefined), memberName(frame)));
      at += 1;
    } else if (char === '}' || char === ']') {
      stack.pop();
      at += 1;
    } else if (char === ',') {
      frame.expectKey = frame.object;
      frame.key = undefined;
      at += 1;
    } else if (char === ':') {
      frame.expectKey = false;
      at += 1;
    } else if (char === '"') {
      at = readString(text, at, frame, context, depth, nested, edits);
    } else {
      LITERAL.lastIndex = at;
      LITERAL.exec(text);
      const end = LITERAL.lastIndex;
      const literal = text.slice(at, end);
      if (end === at || !/^(?:-?\d|true$|false$|null$)/.test(literal)) return at;
      const kind = /^-?\d/.test(literal) ? memberKind(frame, literal) : undefined;
      if (kind && !isCountName(frame.key ?? '')) {
        edits.push(secretEdit(context, at, end, kind, literal, '"'));
      }
      at = end;
    }
  }
  return at;
}

function openFrame(
  object: boolean,
  inherited: RedactionKind | undefined,
  parent: string | undefined,
): Frame {
  return { object, inherited, parent, expectKey: object, key: undefined, valueName: undefined };
}

/** The name that makes the current member secret: its key, or the sibling `name`'s value. */
function memberName(frame: Frame): string | undefined {
  const key = frame.key;
  if (!frame.object || key === undefined) return undefined;
  return VALUE_MEMBERS.has(key) && frame.valueName !== undefined ? frame.valueName : key;
}

/** The kind of the current member: its own, else the one its container inherited. */
function memberKind(frame: Frame, value: string | undefined): RedactionKind | undefined {
  const name = memberName(frame);
  if (name === undefined) return frame.inherited;
  return classifyMember(name, frame.parent) ??
    (isJwkPrivateMember(name, value) ? 'private-key' : frame.inherited);
}

/** Handles the string token at `start` as a key or a value; returns the index after it. */
function readString(
  text: string,
  start: number,
  frame: Frame,
  context: Context,
  depth: number,
  nested: NestedPlanner,
  edits: Edit[],
): number {
  const { end, closed } = stringEnd(text, start);
  const value = decodeString(text.slice(start, end), closed);
  if (frame.object && frame.expectKey) {
    frame.key = value;
    frame.expectKey = false;
    // Maps keyed by tokens (device tokens, API keys) exist: long keys are read as text.
    if (value.length >= 20) pushIfChanged(edits, start, end, nested(value, 'text', depth + 1));
    return end;
  }
  const kind = memberKind(frame, value);
  if (frame.object && frame.key !== undefined && NAME_MEMBERS.has(frame.key)) {
    frame.valueName = value.length <= 100 && classifyName(value) ? value : undefined;
  }
  const plan = kind
    ? planSecretValue(value, kind, context, memberName(frame))
    : nested(value, 'auto', depth + 1);
  pushIfChanged(edits, start, end, plan);
  return end;
}

function pushIfChanged(edits: Edit[], start: number, end: number, plan: Plan): void {
  if (plan.changed) {
    edits.push(nestedEdit(start, end, plan, (rendered) => JSON.stringify(rendered)));
  }
}

/** The index after the string token starting at `start` (the text's end when unterminated). */
function stringEnd(text: string, start: number): { end: number; closed: boolean } {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return { end: text.length, closed: false };
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes += 1;
    if (backslashes % 2 === 0) return { end: quote + 1, closed: true };
    from = quote + 1;
  }
}

function decodeString(token: string, closed: boolean): string {
  const inner = token.slice(1, closed ? -1 : undefined);
  if (!inner.includes('\\')) return inner;
  try {
    return JSON.parse(`"${inner}"`) as string;
  } catch {
    return inner;
  }
}
