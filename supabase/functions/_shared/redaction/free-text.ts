// Secrets in free text (a log line, an HTML page, a header value, a string inside JSON): known
// token formats, URL passwords, `Bearer`/`Basic` credentials, `name=value` and `name: value`
// pairs under secret names (with header lines such as `Cookie: a=1`), XML elements and HTML
// form fields with secret names, and the same in percent-encoded and base64 runs once decoded.
// Every pattern is anchored at a token start to stay linear.
import { type DecodedInspector, findBase64RunEdits } from './base64-runs.ts';
import { PLACEHOLDER_PATTERN } from './kinds.ts';
import { findPercentRunEdits } from './percent-runs.ts';
import { type Context, type Edit, secretEdit } from './plan.ts';
import { classifyHeaderName, classifyName, isCountName } from './secret-names.ts';
import { findHeaderValueEdits, findSecretValueEdits } from './secret-values.ts';
import { detectFormat, findFormatEdits, isPublishableKey } from './token-formats.ts';

/** How encoded runs in a text are read; the caller knows how deep the text is nested. */
export interface RunDecoding {
  /** Reads base64-decoded text (undefined past the decoding depth: text runs are withheld). */
  readonly inspect: DecodedInspector | undefined;
  /** False inside percent-decoded text, which was decoded as far as it goes already. */
  readonly percent: boolean;
}

/** Adds an edit for every secret found in `text[from, to)`. */
export function findTextEdits(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
  decoding: RunDecoding,
): void {
  const first = edits.length;
  findFormatEdits(text, from, to, context, edits);
  const within = (found: number) => found !== -1 && found < to;
  if (within(text.indexOf('://', from))) findUrlPasswords(text, from, to, context, edits);
  SCHEME_HINT.lastIndex = from;
  if (within(SCHEME_HINT.exec(text)?.index ?? -1)) {
    findSchemeCredentials(text, from, to, context, edits);
  }
  if (within(text.indexOf(':', from)) || within(text.indexOf('=', from))) {
    findAssignments(text, from, to, context, edits);
  }
  findMarkupFields(text, from, to, context, edits);
  if (decoding.percent && within(text.indexOf('%', from))) {
    const inner: RunDecoding = { inspect: decoding.inspect, percent: false };
    findPercentRunEdits(text, from, to, edits, (decoded, found) => {
      findTextEdits(decoded, 0, decoded.length, context, found, inner);
    });
  }
  findBase64RunEdits(text, from, to, context, edits, first, decoding.inspect);
  dropEditsInsidePlaceholders(text, from, to, edits, first);
}

const DATABASE_SCHEMES =
  /^(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|cockroachdb|clickhouse|kafka|nats|memcached?|ldaps?|neo4j(?:\+s)?|couchbases?)$/i;
// RFC 3986 §3.2.1 userinfo `user:password@` (the password runs to the last `@` of the authority).
const URL_USERINFO =
  /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{1,30}):\/\/([^\s/?#@:"'<>\\]*):([^\s/?#"'<>\\]+)@/g;

function findUrlPasswords(text: string, from: number, to: number, context: Context, edits: Edit[]) {
  URL_USERINFO.lastIndex = from;
  for (let match = URL_USERINFO.exec(text); match; match = URL_USERINFO.exec(text)) {
    const end = match.index + match[0].length - 1;
    if (end > to) break;
    const password = match[3] ?? '';
    const kind = DATABASE_SCHEMES.test(match[1] ?? '') ? 'connection-string' : 'password';
    edits.push(
      secretEdit(context, end - password.length, end, detectFormat(password) ?? kind, password),
    );
  }
}

const SCHEME_HINT = /earer|EARER|asic|ASIC/g;
const BEARER = /(?<![A-Za-z0-9_-])(?:[Bb]earer|BEARER)[ \t]+([A-Za-z0-9._~+/[\]:-]+=*)/g;
const BASIC =
  /(?<![A-Za-z0-9_-])(?:[Bb]asic|BASIC)[ \t]+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/g;

/** RFC 6750 §2.1 `Bearer <token>` and RFC 7617 §2 `Basic <base64 user:password>` in any text. */
function findSchemeCredentials(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
): void {
  for (const pattern of [BEARER, BASIC]) {
    pattern.lastIndex = from;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      const end = match.index + match[0].length;
      if (end > to) break;
      const credential = match[1] ?? '';
      const kind = pattern === BEARER
        ? isBearerToken(credential) ? detectFormat(credential) ?? 'bearer' : undefined
        : isBasicCredential(credential)
        ? 'basic-auth'
        : undefined;
      if (kind) edits.push(secretEdit(context, end - credential.length, end, kind, credential));
    }
  }
}

/** Prose says "bearer tokens"; a token is longer, or not only letters. */
function isBearerToken(credential: string): boolean {
  if (credential.length < 8 || isPublishableKey(credential)) return false;
  return !(/^[A-Za-z]+$/.test(credential) && credential.length < 24);
}

function isBasicCredential(credential: string): boolean {
  try {
    return /^[\x20-\x7e\u0080-\uffff]*:[\x20-\x7e\u0080-\uffff]*$/.test(atob(credential));
  } catch {
    return false;
  }
}

// `name=value`, `name: value`, `"name": "value"`, `\"name\":\"value\"` (JSON inside a string).
const ASSIGNMENT =
  /(?<![\w.$[\]-])(\\?["']?)([A-Za-z_$][\w.$[\]-]{0,99})(\\?["']?)[ \t]{0,16}([:=])/g;
// `]` does not end a value: a look-alike placeholder in front of a secret must not hide it.
const UNQUOTED_VALUE = /[^\s&;,"'<>)}`\\]*/y;
const NOT_A_VALUE = /^(?:true|false|null|undefined|none|nil)$/i;
const SCHEME_WORD = /^(?:bearer|basic|token|digest|negotiate|ntlm|apikey|key|oauth|dpop|bot)$/i;

function findAssignments(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
): void {
  ASSIGNMENT.lastIndex = from;
  for (let match = ASSIGNMENT.exec(text); match; match = ASSIGNMENT.exec(text)) {
    const at = match.index + match[0].length;
    if (at > to) break;
    const [, openQuote, name = '', closeQuote, separator] = match;
    const next = text.charAt(at);
    // Nothing after the separator (padded base64 ends in `=`): no value to judge.
    if (at >= to || next === separator || (separator === ':' && text.startsWith('//', at))) {
      continue;
    }
    // `scheme://user:password@host` is the URL detector's: the user is not a field name.
    if (separator === ':' && text.startsWith('//', match.index - 2)) continue;
    // The kind inside a placeholder (`[redacted:password:…]`) is not a field name.
    if (text.startsWith('[redacted:', match.index - 10)) continue;
    const unquoted = separator === ':' && !openQuote && !closeQuote;
    // A header line also follows the header rule (`X-Functions-Key: …`, docs/redaction.md).
    const kind = classifyName(name) ??
      (unquoted && isHeaderLine(text, match.index, name) ? classifyHeaderName(name) : undefined);
    if (!kind) continue;
    const cookies = kind === 'cookie' || kind === 'set-cookie';
    if (unquoted && (cookies || isHeaderLine(text, match.index, name))) {
      // A header line: the value is the rest of it (a cookie list, a scheme and credentials).
      let lineEnd = at;
      while (lineEnd < to && text[lineEnd] !== '\n' && text[lineEnd] !== '\r') lineEnd += 1;
      findHeaderValueEdits(name, text.slice(at, lineEnd), at, context, edits);
      ASSIGNMENT.lastIndex = lineEnd;
      continue;
    }
    const value = readValue(text, at, to);
    if (!value || NOT_A_VALUE.test(value.text)) continue;
    if (isCountName(name) && /^\d+$/.test(value.text)) continue;
    findSecretValueEdits(value.text, value.start, kind, context, edits);
    ASSIGNMENT.lastIndex = Math.max(ASSIGNMENT.lastIndex, value.end);
  }
}

/** `Name: value` starting a line, as in an HTTP message, a YAML file or `curl -v` (`> `). */
function isHeaderLine(text: string, start: number, name: string): boolean {
  if (!/^[A-Za-z0-9-]+$/.test(name)) return false;
  let at = start - 1;
  while (at >= 0 && ' \t<>*'.includes(text.charAt(at))) at -= 1;
  return at < 0 || text[at] === '\n' || text[at] === '\r';
}

interface Value {
  text: string;
  start: number;
  end: number;
}

/** The value after a separator: quoted (up to its closing quote) or a run of value characters. */
function readValue(text: string, from: number, to: number): Value | undefined {
  let at = from;
  while (at < to && (text[at] === ' ' || text[at] === '\t')) at += 1;
  const quote = text.startsWith('\\"', at)
    ? '\\"'
    : text[at] === '"' || text[at] === "'"
    ? text[at]
    : '';
  if (quote) {
    const start = at + quote.length;
    const close = findClosingQuote(text, start, to, quote);
    return { text: text.slice(start, close), start, end: close + quote.length };
  }
  if (at >= to || '{[(\r\n'.includes(text.charAt(at))) return undefined;
  UNQUOTED_VALUE.lastIndex = at;
  UNQUOTED_VALUE.exec(text);
  let end = Math.min(UNQUOTED_VALUE.lastIndex, to);
  if (SCHEME_WORD.test(text.slice(at, end))) {
    // `Authorization: Token abc` mid-line: the credential is the word after the scheme.
    let credential = end;
    while (credential < to && (text[credential] === ' ' || text[credential] === '\t')) {
      credential += 1;
    }
    UNQUOTED_VALUE.lastIndex = credential;
    UNQUOTED_VALUE.exec(text);
    if (UNQUOTED_VALUE.lastIndex > credential) end = Math.min(UNQUOTED_VALUE.lastIndex, to);
  }
  return end > at ? { text: text.slice(at, end), start: at, end } : undefined;
}

function findClosingQuote(text: string, start: number, to: number, quote: string): number {
  const limit = Math.min(to, start + 65536);
  for (let at = start; at < limit; at += 1) {
    const char = text[at];
    if (char === '\n' || char === '\r') return at;
    if (quote === '\\"') {
      if (char === '\\' && text[at + 1] === '"') return at;
      if (char === '\\') at += 1;
    } else if (char === '\\') {
      at += 1;
    } else if (char === quote) {
      return at;
    }
  }
  return limit;
}

// `<Password>x</Password>` (SOAP, XML APIs) and `<input name="_csrf" value="x">`, `<meta
// name="csrf-token" content="x">` (HTML pages carry CSRF and session tokens this way).
const XML_ELEMENT =
  /<((?:[A-Za-z_][\w.-]{0,40}:)?([A-Za-z_][\w.-]{0,99}))(?:\s[^<>]{0,1000})?>([^<]{1,65536})<\/\1>/dg;
const HTML_FIELD =
  /\b(?:name|id|property)\s*=\s*["']([^"'<>]{1,100})["'][^<>]{0,500}?\b(?:content|value)\s*=\s*(["'])([^"'<>]*)\2/dgi;
const HTML_FIELD_REVERSED =
  /\b(?:content|value)\s*=\s*(["'])([^"'<>]*)\1[^<>]{0,500}?\b(?:name|id|property)\s*=\s*["']([^"'<>]{1,100})["']/dgi;
const MARKUP_SCANS: [RegExp, number, number][] = [
  [XML_ELEMENT, 2, 3],
  [HTML_FIELD, 1, 3],
  [HTML_FIELD_REVERSED, 3, 2],
];

function findMarkupFields(
  text: string,
  from: number,
  to: number,
  context: Context,
  edits: Edit[],
): void {
  if (text.indexOf('<', from) === -1) return;
  for (const [pattern, nameGroup, valueGroup] of MARKUP_SCANS) {
    pattern.lastIndex = from;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      if (match.index + match[0].length > to) break;
      const kind = classifyName(match[nameGroup] ?? '');
      const value = match[valueGroup] ?? '';
      const valueStart = match.indices?.[valueGroup]?.[0];
      if (!kind || value.length === 0 || valueStart === undefined) continue;
      findSecretValueEdits(value, valueStart, kind, context, edits);
    }
  }
}

/** Placeholders already in the text are not secrets: edits inside them are dropped. */
function dropEditsInsidePlaceholders(
  text: string,
  from: number,
  to: number,
  edits: Edit[],
  first: number,
): void {
  // A placeholder may start before `from` (a JSON scan stopped inside it) and still hold edits.
  const start = Math.max(0, from - 64);
  if (text.indexOf('[redacted:', start) === -1) return;
  const ranges: [number, number][] = [];
  PLACEHOLDER_PATTERN.lastIndex = start;
  for (let match = PLACEHOLDER_PATTERN.exec(text); match; match = PLACEHOLDER_PATTERN.exec(text)) {
    if (match.index >= to) break;
    ranges.push([match.index, match.index + match[0].length]);
  }
  if (ranges.length === 0) return;
  const found = edits.splice(first);
  for (const edit of found) {
    // The ranges are sorted and disjoint: only the last one starting at or before the edit
    // can hold it.
    let low = 0;
    let high = ranges.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((ranges[middle]?.[0] ?? 0) <= edit.start) low = middle;
      else high = middle - 1;
    }
    const [start, end] = ranges[low] ?? [0, 0];
    if (!(start <= edit.start && edit.end <= end)) edits.push(edit);
  }
}
