// Base64 and base64url runs inside text are decoded and read like any string; a run whose text
// holds a secret becomes one placeholder (docs/redaction.md "Encoded secrets"). Binary runs
// (images, hashes, nonces) are rejected after their first bytes and left alone.
import { decodeBase64, decodeTextBytes } from './bytes.ts';
import type { NestedPlanner } from './json-text.ts';
import { formatUnscanned, type RedactionKind } from './kinds.ts';
import { type Context, type Edit, markerEdit, secretEdit } from './plan.ts';

/** The kind of the first secret in a decoded text, or undefined when it holds none. */
export type DecodedInspector = (decoded: string) => RedactionKind | undefined;

/**
 * Base64 inside base64 is read this deep (the JSON-in-string depth of text.ts counts too);
 * a text run deeper than that is withheld rather than echoed unread.
 */
export const MAX_DECODE_DEPTH = 8;

/** 16 characters are 12 bytes, as long as `password=abc`: shorter runs are not decoded. */
const MIN_RUN = 16;
/** Characters decoded to see whether a run is text before the whole of it is decoded. */
const SNIFF_CHARS = 64;

// RFC 4648 §4 (`+/`) and §5 (`-_`) alphabets: the 6-bit value of each character, -1 for others.
const SEXTETS = new Int8Array(128).fill(-1);
for (
  const [index, char] of [
    ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789',
  ].entries()
) {
  SEXTETS[char.charCodeAt(0)] = index;
}
SEXTETS[43] = 62; // +
SEXTETS[45] = 62; // -
SEXTETS[47] = 63; // /
SEXTETS[95] = 63; // _

/**
 * The inspector that reads decoded text as a string nested in the current one. Its secrets go
 * to a scratch set: the run becomes one placeholder, so theirs are never shown or computed.
 */
export function inspectorOf(
  context: Context,
  nested: NestedPlanner,
  depth: number,
): DecodedInspector | undefined {
  if (depth >= MAX_DECODE_DEPTH) return undefined;
  return (decoded) => {
    const secrets = context.secrets;
    context.secrets = new Set();
    try {
      const plan = nested(decoded, 'auto', depth + 1);
      if (!plan.changed) return undefined;
      let kind: RedactionKind | undefined;
      plan.render((found) => {
        kind ??= found;
        return '';
      });
      return kind ?? 'secret';
    } finally {
      context.secrets = secrets;
    }
  };
}

/**
 * Adds an edit for every base64 run in `text[from, to)` that decodes to text holding a secret.
 * Runs inside `edits[first…]` (a Basic credential, a JWT segment) are not decoded again.
 * `inspect` is undefined past the decoding depth: a run of text is then withheld.
 */
export function findBase64RunEdits(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
  first: number,
  inspect: DecodedInspector | undefined,
): void {
  let covered: [number, number][] | undefined;
  // A run is a maximal stretch of the alphabets. A run of MIN_RUN starting at or after `at`
  // holds the character MIN_RUN - 1 further: when that one is not of the alphabets, skip past
  // it (prose is read a word's length at a time).
  let at = from;
  while (at + MIN_RUN <= to) {
    const probe = at + MIN_RUN - 1;
    if (!isRunCharacter(text.charCodeAt(probe))) {
      at = probe + 1;
      continue;
    }
    let start = probe;
    while (start > at && isRunCharacter(text.charCodeAt(start - 1))) start -= 1;
    let end = probe + 1;
    while (end < to && isRunCharacter(text.charCodeAt(end))) end += 1;
    at = end;
    if (end - start < MIN_RUN) continue;
    // RFC 4648 §3.2 padding.
    while (end < to && end - at < 2 && text.charCodeAt(end) === 61) end += 1;
    at = end;
    covered ??= mergedRanges(edits, first);
    if (isCovered(covered, start, end)) continue;
    findRunEdits(text.slice(start, end), start, context, edits, inspect);
  }
}

/** In the scan loop: one table read per character (`SEXTETS` has 128 entries). */
function isRunCharacter(code: number): boolean {
  return code < 128 && (SEXTETS[code] as number) >= 0;
}

function findRunEdits(
  run: string,
  offset: number,
  context: Context,
  edits: Edit[],
  inspect: DecodedInspector | undefined,
): void {
  const push = (at: number, candidate: string, verdict: RedactionKind | Unread) => {
    const start = offset + at;
    const end = start + candidate.length;
    edits.push(
      verdict === UNREAD
        ? markerEdit(start, end, formatUnscanned(candidate.length))
        : secretEdit(context, start, end, verdict, candidate),
    );
  };
  const standard = /[+/]/.test(run);
  const urlSafe = /[-_]/.test(run);
  // A run of one alphabet is decoded whole; mixed alphabets cannot be one base64 text.
  const whole = standard && urlSafe ? BINARY : readRun(run, context, inspect);
  if (whole !== BINARY) {
    if (whole !== CLEAN) push(0, run, whole);
    return;
  }
  if (!standard && !urlSafe) return;
  // Not text as a whole: its pieces between `+/-_` may be (a path `/api/<base64url>`, a
  // prefix `data-<base64>`).
  const separator = /[+/_-]+/g;
  let at = 0;
  for (let match = separator.exec(run);; match = separator.exec(run)) {
    const end = match ? match.index : run.length;
    if (end - at >= MIN_RUN) {
      const piece = run.slice(at, end);
      const verdict = readRun(piece, context, inspect);
      if (verdict !== BINARY && verdict !== CLEAN) push(at, piece, verdict);
    }
    if (!match) return;
    at = match.index + match[0].length;
  }
}

const UNREAD = 'unread';
const BINARY = 'binary';
const CLEAN = 'clean';
type Unread = typeof UNREAD;

/**
 * What a run holds: BINARY (not text), CLEAN (text without a secret), the kind of the first
 * secret in its text, or UNREAD for text past the decoding depth or budget.
 */
function readRun(
  run: string,
  context: Context,
  inspect: DecodedInspector | undefined,
): RedactionKind | Unread | typeof BINARY | typeof CLEAN {
  let length = run.length;
  while (length > 0 && run.charCodeAt(length - 1) === 61) length -= 1;
  if (length % 4 === 1) length -= 1; // a stray last character holds no whole byte
  if (!sniffsAsText(run, Math.min(length, SNIFF_CHARS))) return BINARY;
  const decodedLength = Math.floor((length * 3) / 4);
  if (!inspect || decodedLength > context.decodeRemaining) return UNREAD;
  context.decodeRemaining -= decodedLength;
  const bytes = decodeBase64(run.slice(0, length).replace(/-/g, '+').replace(/_/g, '/'));
  const decoded = bytes && decodeTextBytes(bytes);
  if (decoded === undefined) return BINARY;
  return inspect(decoded) ?? CLEAN;
}

/**
 * Whether the bytes of `run[0, chars)` may begin a text by the rule of decodeTextBytes: UTF-8
 * without control characters other than tab, line breaks and form feed. Decoded by hand, as
 * most runs are binary and fail within a few bytes.
 */
function sniffsAsText(run: string, chars: number): boolean {
  let pending = 0; // continuation bytes the current UTF-8 sequence still needs
  let bits = 0;
  let bitCount = 0;
  for (let index = 0; index < chars; index += 1) {
    bits = ((bits << 6) | (SEXTETS[run.charCodeAt(index)] ?? 0)) & 0xffff;
    bitCount += 6;
    if (bitCount < 8) continue;
    bitCount -= 8;
    const byte = (bits >> bitCount) & 0xff;
    if (pending > 0) {
      if ((byte & 0xc0) !== 0x80) return false;
      pending -= 1;
    } else if (byte < 0x80) {
      if (
        (byte < 0x20 && byte !== 9 && byte !== 10 && byte !== 12 && byte !== 13) || byte === 127
      ) {
        return false;
      }
    } else if (byte >= 0xc2 && byte <= 0xdf) {
      pending = 1;
    } else if (byte >= 0xe0 && byte <= 0xef) {
      pending = 2;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      pending = 3;
    } else {
      return false;
    }
  }
  return true;
}

/** The union of the spans of `edits[first…]`, as sorted disjoint ranges. */
function mergedRanges(edits: Edit[], first: number): [number, number][] {
  const spans: [number, number][] = [];
  for (let index = first; index < edits.length; index += 1) {
    const edit = edits[index];
    if (edit) spans.push([edit.start, edit.end]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const span of spans) {
    const last = merged.at(-1);
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push(span);
  }
  return merged;
}

/** Whether `[start, end)` lies inside one of the sorted disjoint `ranges`. */
function isCovered(ranges: [number, number][], start: number, end: number): boolean {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [rangeStart, rangeEnd] = ranges[middle] ?? [0, 0];
    if (rangeStart > start) high = middle - 1;
    else if (rangeEnd < end) low = middle + 1;
    else return true;
  }
  return false;
}
