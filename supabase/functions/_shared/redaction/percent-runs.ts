// Percent-encoded runs in text (a URL path segment, a query value decoded once, a log line) are
// decoded up to three rounds and searched; each secret found is redacted over the span that
// encodes it, so `/api/eyJ…%2E…` keeps its shape (docs/redaction.md "Encoded secrets").
import type { Edit } from './plan.ts';

/** Double and triple encoding are seen in the wild; more rounds only cost work. */
export const MAX_PERCENT_ROUNDS = 3;

/** Searches a decoded text, adding edits in its own offsets. */
export type DecodedSearch = (decoded: string, edits: Edit[]) => void;

/**
 * Adds the edits `search` finds in the decoded form of every percent-encoded run of
 * `text[from, to)`, mapped back onto the encoded text.
 */
export function findPercentRunEdits(
  text: string,
  from: number,
  to: number,
  edits: Edit[],
  search: DecodedSearch,
): void {
  let at = text.indexOf('%', from);
  while (at !== -1 && at < to) {
    let start = at;
    while (start > from && isRunCharacter(text.charCodeAt(start - 1))) start -= 1;
    let end = at + 1;
    while (end < to && isRunCharacter(text.charCodeAt(end))) end += 1;
    findRunEdits(text, start, end, edits, search);
    at = text.indexOf('%', end);
  }
}

function findRunEdits(
  text: string,
  start: number,
  end: number,
  edits: Edit[],
  search: DecodedSearch,
): void {
  let decoded = text.slice(start, end);
  // For each round, where its decoded triplets sit in its output, in order.
  const rounds: Int32Array[] = [];
  for (let round = 0; round < MAX_PERCENT_ROUNDS; round += 1) {
    const next = decodeRound(decoded);
    if (!next) break;
    rounds.push(next.positions);
    decoded = next.text;
  }
  if (rounds.length === 0) return;
  const found: Edit[] = [];
  search(decoded, found);
  for (const edit of found) {
    const mappedStart = start + encodedOffset(rounds, edit.start);
    const mappedEnd = start + encodedOffset(rounds, edit.end);
    edits.push({ start: mappedStart, end: mappedEnd, kind: edit.kind, render: edit.render });
  }
}

/**
 * One round of RFC 3986 §2.1 decoding, of ASCII triplets only (a secret in a known format is
 * ASCII; `%C3%A9` stays as it is, and a value around it is still redacted by its name), with
 * the output offsets of the decoded triplets; undefined when there was none.
 */
function decodeRound(text: string): { text: string; positions: Int32Array } | undefined {
  const codes = new Uint16Array(text.length);
  const positions: number[] = [];
  let length = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    const high = code === 37 ? hexValue(text.charCodeAt(index + 1)) : -1;
    const low = high >= 0 && high < 8 ? hexValue(text.charCodeAt(index + 2)) : -1;
    if (low >= 0) {
      positions.push(length);
      codes[length] = high * 16 + low;
      index += 2;
    } else {
      codes[length] = code;
    }
    length += 1;
  }
  if (positions.length === 0) return undefined;
  let decoded = '';
  for (let chunk = 0; chunk < length; chunk += 8192) {
    decoded += String.fromCharCode(...codes.subarray(chunk, Math.min(chunk + 8192, length)));
  }
  return { text: decoded, positions: Int32Array.from(positions) };
}

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 65 && code <= 70) return code - 55;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

/** Where decoded offset `at` starts in the encoded run: each triplet before it took 2 more. */
function encodedOffset(rounds: Int32Array[], at: number): number {
  let offset = at;
  for (let round = rounds.length - 1; round >= 0; round -= 1) {
    const positions = rounds[round] ?? new Int32Array();
    // The number of triplets decoded before `offset` in this round's output.
    let low = 0;
    let high = positions.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((positions[middle] ?? 0) < offset) low = middle + 1;
      else high = middle;
    }
    offset += 2 * low;
  }
  return offset;
}

/**
 * RFC 3986 §2.3 unreserved characters, `%`, and the sub-delimiters and `:@` a segment or a
 * field holds (`=` and `+` too, so `t=Bearer%2520…` is one run); `/?#&;,` and quotes end a run.
 */
function isRunCharacter(code: number): boolean {
  return (code >= 48 && code <= 58) || (code >= 64 && code <= 90) ||
    (code >= 97 && code <= 122) || code === 37 || code === 45 || code === 46 || code === 95 ||
    code === 126 || code === 43 || code === 61 || code === 33 || code === 36 || code === 42;
}
