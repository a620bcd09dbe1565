// Secrets in `multipart/form-data` bodies (RFC 7578): a part named like a secret is redacted
// whole; other text parts are read by their own media type; file parts that are not text are
// left as they are; base64 and quoted-printable parts are read decoded. The proxy stores
// multipart bodies as base64 (they are not textual to it), so parts are cut from a binary string
// and only text parts are decoded and encoded again.
import { binaryOfBytes, bytesOfBinary, decodeTextBytes, decodeUtf8, encodeUtf8 } from './bytes.ts';
import { hintForContentType, type TextHint } from './content-types.ts';
import type { NestedPlanner } from './json-text.ts';
import { type Context, type Edit, nestedEdit, type Plan, planEdits } from './plan.ts';
import { classifyName } from './secret-names.ts';
import { planSecretValue } from './secret-values.ts';
import { transferCodecOf } from './transfer-encodings.ts';

/** How part contents map to text: identity for a text body, UTF-8 for a binary string. */
export interface PartCodec {
  /** The part as text, or undefined to leave it alone (binary). */
  decode(raw: string, declaredText: boolean): string | undefined;
  encode(text: string): string;
}

export const TEXT_CODEC: PartCodec = { decode: (raw) => raw, encode: (text) => text };

export const BINARY_CODEC: PartCodec = {
  decode(raw, declaredText) {
    const bytes = bytesOfBinary(raw);
    return declaredText ? decodeUtf8(bytes) : decodeTextBytes(bytes);
  },
  encode: (text) => binaryOfBytes(encodeUtf8(text)),
};

export function planMultipart(
  text: string,
  boundary: string,
  codec: PartCodec,
  context: Context,
  depth: number,
  nested: NestedPlanner,
): Plan {
  const delimiter = `--${boundary}`;
  const edits: Edit[] = [];
  let at = text.indexOf(delimiter);
  while (at !== -1) {
    const afterDelimiter = at + delimiter.length;
    if (text.startsWith('--', afterDelimiter)) break; // the close delimiter
    const lineEnd = text.indexOf('\n', afterDelimiter);
    if (lineEnd === -1) break;
    const partStart = lineEnd + 1;
    let next = text.indexOf(`\r\n${delimiter}`, partStart);
    let partEnd = next;
    if (next === -1) {
      next = text.indexOf(`\n${delimiter}`, partStart);
      partEnd = next;
    }
    // A body cut by the capture cap ends inside its last part.
    if (partEnd === -1) partEnd = text.length;
    findPartEdits(text, partStart, partEnd, codec, context, depth, nested, edits);
    at = next === -1 ? -1 : text.indexOf(delimiter, next);
  }
  return planEdits(text, edits, context);
}

function findPartEdits(
  text: string,
  start: number,
  end: number,
  codec: PartCodec,
  context: Context,
  depth: number,
  nested: NestedPlanner,
  edits: Edit[],
): void {
  let headersEnd = text.indexOf('\r\n\r\n', start);
  let contentStart = headersEnd + 4;
  if (headersEnd === -1 || headersEnd > end) {
    headersEnd = text.indexOf('\n\n', start);
    contentStart = headersEnd + 2;
  }
  if (headersEnd === -1 || headersEnd > end) return;
  const headers = text.slice(start, headersEnd);
  const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? '';
  const name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ??
    /\bname=([^;\s]+)/i.exec(disposition)?.[1];
  const isFile = /\bfilename\*?=/i.test(disposition);
  const contentType = /^content-type:\s*(.*)$/im.exec(headers)?.[1]?.trim();
  const hint = hintForContentType(contentType);
  const declaredText = !isFile || hint !== undefined;
  const raw = text.slice(contentStart, end);
  // RFC 2045 §6: a base64 or quoted-printable part is read as the text it decodes to. When it
  // decodes to no text, the label is not trusted: the part is read as it stands.
  const declared = transferCodecOf(/^content-transfer-encoding:\s*(\S*)/im.exec(headers)?.[1]);
  const bytes = declared?.decode(codec.decode(raw, true) ?? '');
  const decoded = bytes && decodeTextBytes(bytes);
  const transfer = decoded === undefined ? undefined : declared;
  const content = decoded ?? codec.decode(raw, declaredText);
  if (content === undefined || content.length === 0) return;
  const kind = name === undefined ? undefined : classifyName(name);
  const readAs: TextHint = hint === undefined || hint === 'multipart' ? 'auto' : hint;
  const plan = kind
    ? planSecretValue(content, kind, context, name)
    : nested(content, readAs, depth + 1);
  if (!plan.changed) return;
  const encode = transfer
    ? (rendered: string) => codec.encode(transfer.encode(encodeUtf8(rendered), raw))
    : codec.encode;
  edits.push(nestedEdit(contentStart, end, plan, encode));
}
