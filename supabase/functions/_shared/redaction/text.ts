// Plans the redaction of one string: bounded (only the first `maxStringChars` are scanned, and
// at most `maxTotalChars` per call), read by its hint (JSON, form, URL, text, or sniffed), and
// never throwing: a string the redactor fails on is withheld, not echoed.
import { inspectorOf } from './base64-runs.ts';
import type { TextHint } from './content-types.ts';
import { findTextEdits, type RunDecoding } from './free-text.ts';
import { planForm, planUrl } from './form-text.ts';
import { findJsonEdits } from './json-text.ts';
import { formatWithheld, isPlaceholderOnly } from './kinds.ts';
import {
  constantPlan,
  type Context,
  type Edit,
  type Plan,
  planEdits,
  scanLength,
  unchangedPlan,
  withUnscannedTail,
} from './plan.ts';

/** How deep strings inside strings are decoded (JSON in a JSON string in a form field…). */
export const MAX_NESTING = 4;

/**
 * The plan for a string. `depth` 0 is a string of the input, counted against the budget;
 * deeper ones were decoded from it and are bounded by it.
 */
export function planString(text: string, hint: TextHint, context: Context, depth: number): Plan {
  try {
    if (depth > 0) return planScanned(text, hint, context, depth);
    const { maxStringChars } = context.limits;
    context.decodeRemaining = maxStringChars;
    const scanned = context.remaining <= 0
      ? 0
      : scanLength(text, Math.min(maxStringChars, context.remaining));
    context.remaining -= Math.max(scanned, 1);
    if (scanned === text.length) return planScanned(text, hint, context, depth);
    const head = text.slice(0, scanned);
    return withUnscannedTail(planScanned(head, hint, context, depth), text.length - scanned);
  } catch {
    return constantPlan(formatWithheld(`${text.length} characters`));
  }
}

function planScanned(text: string, hint: TextHint, context: Context, depth: number): Plan {
  // Every secret pattern needs 8 characters, or a separator (`pw=1`, `<pin>1</pin>`).
  if (text.length < 8 && !/[:=<]/.test(text)) return unchangedPlan(text);
  if (isPlaceholderOnly(text)) return unchangedPlan(text);
  const nested = (inner: string, innerHint: TextHint, innerDepth: number) =>
    planString(inner, innerHint, context, innerDepth);
  const reading = depth > MAX_NESTING ? 'text' : hint === 'auto' ? sniffHint(text) : hint;
  if (reading === 'form') return planForm(text, context, depth, nested);
  if (reading === 'url') return planUrl(text, context, depth, nested);
  const edits: Edit[] = [];
  const decoding: RunDecoding = { inspect: inspectorOf(context, nested, depth), percent: true };
  if (reading === 'json') {
    const start = text.search(/\S/);
    const stop = start === -1
      ? text.length
      : findJsonEdits(text, start, context, depth, nested, edits);
    if (stop < text.length) findTextEdits(text, stop, text.length, context, edits, decoding);
  } else {
    findTextEdits(text, 0, text.length, context, edits, decoding);
  }
  return planEdits(text, edits, context);
}

/** What a string looks like: JSON, a lone URL, a form (`a=1&b=2`), or text. */
function sniffHint(text: string): TextHint {
  const first = text.charAt(text.search(/\S/));
  if (first === '{' || first === '[') return 'json';
  if (text.length > 65536) return 'text';
  if (/^[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/\S*$/.test(text)) return 'url';
  // Padded base64 (`cGFzc3dvcmQ9eA==`) is no `name=` field: its run is decoded as text.
  if (text.endsWith('=') && /^[A-Za-z0-9+/_-]{16,}={1,2}$/.test(text)) return 'text';
  if (/^[^\s=&]{1,100}=\S*$/.test(text)) return 'form';
  return 'text';
}
