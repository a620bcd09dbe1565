// MIME content transfer encodings of a multipart part (RFC 2045 §6; RFC 7578 §4.7 deprecates
// them in form data, yet clients still send them): base64 and quoted-printable are decoded so a
// part's content is read as what it says, and encoded again the same way once redacted.
import { binaryOfBytes, bytesOfBinary, decodeBase64, encodeBase64 } from './bytes.ts';
import { PLACEHOLDER_PATTERN } from './kinds.ts';

/** A transfer encoding the redactor reads through. */
export interface TransferCodec {
  /** The part's bytes, or undefined when the content is not in this encoding. */
  decode(content: string): Uint8Array | undefined;
  /** The bytes in this encoding, wrapped like `original` (same line break, same width). */
  encode(bytes: Uint8Array, original: string): string;
}

/** RFC 2045 §6.8, lines of at most 76 characters. */
const BASE64_CODEC: TransferCodec = {
  decode: (content) => decodeBase64(content),
  encode(bytes, original) {
    const encoded = encodeBase64(bytes);
    const lineBreak = lineBreakOf(original);
    if (!lineBreak) return encoded;
    const lines = encoded.match(/.{1,76}/g) ?? [];
    return lines.join(lineBreak) + (/\r?\n$/.test(original) ? lineBreak : '');
  },
};

/** RFC 2045 §6.7: `=XX` octets and `=` soft line breaks. */
const QUOTED_PRINTABLE_CODEC: TransferCodec = {
  decode(content) {
    const binary = content
      .replace(/[ \t]+(?=\r?\n|$)/g, '') // rule 3: trailing white space is not content
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    // Characters past one byte are not quoted-printable; take them as UTF-8.
    return /[\u0100-\uffff]/.test(binary)
      ? new TextEncoder().encode(binary)
      : bytesOfBinary(binary);
  },
  encode(bytes, original) {
    return encodeQuotedPrintable(bytes, lineBreakOf(original) ?? '\r\n');
  },
};

/** The codec of a `Content-Transfer-Encoding` value; identity codings need none. */
export function transferCodecOf(encoding: string | undefined): TransferCodec | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case 'base64':
      return BASE64_CODEC;
    case 'quoted-printable':
      return QUOTED_PRINTABLE_CODEC;
    default:
      return undefined; // 7bit, 8bit, binary: the content is what it is
  }
}

function lineBreakOf(text: string): string | undefined {
  const at = text.search(/\r?\n/);
  if (at === -1 || at === text.length - (text.endsWith('\r\n') ? 2 : 1)) return undefined;
  return text[at] === '\r' ? '\r\n' : '\n';
}

/**
 * Quoted-printable lines of at most 76 characters; a placeholder is never split by a soft
 * line break, so it stays readable in the encoded part.
 */
function encodeQuotedPrintable(bytes: Uint8Array, lineBreak: string): string {
  const text = binaryOfBytes(bytes);
  const tokens: string[] = [];
  let at = 0;
  PLACEHOLDER_PATTERN.lastIndex = 0;
  for (let match = PLACEHOLDER_PATTERN.exec(text); match; match = PLACEHOLDER_PATTERN.exec(text)) {
    for (let index = at; index < match.index; index += 1) tokens.push(quoteOctet(text, index));
    tokens.push(match[0]);
    at = match.index + match[0].length;
  }
  for (let index = at; index < text.length; index += 1) tokens.push(quoteOctet(text, index));
  let out = '';
  let line = 0;
  for (const token of tokens) {
    if (token === '\n' || token === '\r\n') {
      out += lineBreak;
      line = 0;
      continue;
    }
    if (line + token.length > 75) {
      out += `=${lineBreak}`;
      line = 0;
    }
    out += token;
    line += token.length;
  }
  return out;
}

/** One octet as quoted-printable: printable ASCII as itself, line breaks kept, the rest `=XX`. */
function quoteOctet(text: string, index: number): string {
  const code = text.charCodeAt(index);
  if (code === 10) return '\n';
  if (code === 13) return text.charCodeAt(index + 1) === 10 ? '' : '=0D';
  const next = text.charCodeAt(index + 1);
  const beforeBreak = Number.isNaN(next) || next === 10 || next === 13;
  // Rule 3: white space at the end of a line is encoded.
  if ((code === 32 || code === 9) && beforeBreak) return `=${hexOctet(code)}`;
  if ((code >= 33 && code <= 126 && code !== 61) || code === 32 || code === 9) {
    return String.fromCharCode(code);
  }
  return `=${hexOctet(code)}`;
}

function hexOctet(code: number): string {
  return code.toString(16).toUpperCase().padStart(2, '0');
}
