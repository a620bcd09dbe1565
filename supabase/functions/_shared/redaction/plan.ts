// The redaction plan: detection runs synchronously and records edits (this span becomes a
// placeholder for that secret); the fingerprints are then computed at once with WebCrypto, and
// the plan renders the redacted copy. Detection and rendering never see different texts.
import { formatPlaceholder, formatUnscanned, type RedactionKind } from './kinds.ts';

/** Gives the placeholder of a secret (its fingerprint is known by render time). */
export type Lookup = (kind: RedactionKind, secret: string) => string;

/** A string's redaction: `changed` is false when rendering gives the input back unchanged. */
export interface Plan {
  readonly changed: boolean;
  render(lookup: Lookup): string;
}

/** The redaction of any value (a capture, a body object): renders its redacted deep copy. */
export type ValuePlan = (lookup: Lookup) => unknown;

/** Replaces `[start, end)` of a text; `kind` is set when the span is one secret. */
export interface Edit {
  readonly start: number;
  readonly end: number;
  readonly kind?: RedactionKind;
  render(lookup: Lookup): string;
}

export interface Limits {
  /** Characters of one string that are scanned; the rest is replaced by a marker. */
  readonly maxStringChars: number;
  /** Characters scanned in one call, over all strings; later strings are withheld. */
  readonly maxTotalChars: number;
}

/** The state of one redaction call: the secrets met so far and the scanning budget left. */
export interface Context {
  /** Swapped for a scratch set while a decoded run is only inspected (base64-runs.ts). */
  secrets: Set<string>;
  readonly limits: Limits;
  remaining: number;
  /**
   * Characters that may still be decoded from base64 runs inside the current string of the
   * input (reset to `maxStringChars` for each one), so nested encodings cost bounded work.
   */
  decodeRemaining: number;
}

export function createContext(limits: Limits): Context {
  return {
    secrets: new Set(),
    limits,
    remaining: limits.maxTotalChars,
    decodeRemaining: limits.maxStringChars,
  };
}

export function unchangedPlan(text: string): Plan {
  return { changed: false, render: () => text };
}

export function constantPlan(text: string): Plan {
  return { changed: true, render: () => text };
}

/** An edit that replaces `[start, end)` with the placeholder of `secret` (wrapped in quotes). */
export function secretEdit(
  context: Context,
  start: number,
  end: number,
  kind: RedactionKind,
  secret: string,
  quote = '',
): Edit {
  context.secrets.add(secret);
  return { start, end, kind, render: (lookup) => `${quote}${lookup(kind, secret)}${quote}` };
}

/** An edit that replaces `[start, end)` with a fixed marker (text that was not read). */
export function markerEdit(start: number, end: number, marker: string): Edit {
  return { start, end, render: () => marker };
}

/** An edit that replaces `[start, end)` with a nested plan's output, transformed by `wrap`. */
export function nestedEdit(
  start: number,
  end: number,
  plan: Plan,
  wrap: (rendered: string) => string = (rendered) => rendered,
): Edit {
  return { start, end, render: (lookup) => wrap(plan.render(lookup)) };
}

/**
 * The plan applying `edits` to `text`. Overlapping edits never leave part of a secret behind:
 * an edit inside another is dropped, and two that partly overlap become one placeholder for
 * their union.
 */
export function planEdits(text: string, edits: Edit[], context: Context): Plan {
  if (edits.length === 0) return unchangedPlan(text);
  const sorted = [...edits].sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Edit[] = [];
  for (const edit of sorted) {
    const last = kept.at(-1);
    if (!last || edit.start >= last.end) {
      kept.push(edit);
    } else if (edit.end > last.end) {
      const kind = last.kind ?? edit.kind ?? 'secret';
      kept[kept.length - 1] = secretEdit(
        context,
        last.start,
        edit.end,
        kind,
        text.slice(last.start, edit.end),
      );
    }
  }
  return {
    changed: true,
    render(lookup) {
      let out = '';
      let at = 0;
      for (const edit of kept) {
        out += text.slice(at, edit.start) + edit.render(lookup);
        at = edit.end;
      }
      return out + text.slice(at);
    },
  };
}

/** A plan that renders `head`'s plan followed by the marker for an unscanned tail. */
export function withUnscannedTail(plan: Plan, tailLength: number): Plan {
  return { changed: true, render: (lookup) => plan.render(lookup) + formatUnscanned(tailLength) };
}

/**
 * Where to stop scanning a long string: at most `max` characters, and never inside a run of
 * token characters, so a secret cut by the limit is not half echoed.
 */
export function scanLength(text: string, max: number): number {
  if (text.length <= max) return text.length;
  let end = max;
  while (end > 0 && isTokenCharacter(text.charCodeAt(end - 1))) end -= 1;
  return end;
}

/** Letters, digits and `+/=_.~%:-`: the characters secrets are made of. */
export function isTokenCharacter(code: number): boolean {
  return (code >= 48 && code <= 58) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) ||
    code === 43 || code === 47 || code === 61 || code === 95 || code === 46 || code === 126 ||
    code === 37 || code === 45;
}

/** The placeholder lookup over computed fingerprints. */
export function createLookup(prints: Map<string, string>): Lookup {
  return (kind, secret) => formatPlaceholder(kind, prints.get(secret) ?? '00000000');
}
