// A breakpoint's `modified_message` (docs/proxy.md "Breakpoints") applied to the held message: for
// a request `method`, `url`, `headers`, `body`; for a response `status`, `headers`, `body` (the
// database refuses other keys). Absent fields keep the held value. `headers` replaces every header
// and is `[[name, value], …]` (the capture's form) or `{name: value | [values]}`; `body` is a
// string (UTF-8), `{"text": …}`, `{"base64": …}` or null (empty). A new body gets its
// Content-Length and loses Transfer-Encoding, and, when `headers` is not given too,
// Content-Encoding (the editor wrote the decoded form it was shown).

export class ModifiedMessageError extends Error {
  override name = 'ModifiedMessageError';
}

export interface EditableMessage {
  /** Flat [name, value, name, value, …] as Node's rawHeaders. */
  rawHeaders: string[];
  body: Buffer;
}

function headersOf(value: unknown): string[] {
  const flat: string[] = [];
  const push = (name: unknown, header: unknown) => {
    // An HTTP/2 pseudo-header (RFC 9113 §8.3: :method, :path, :authority, :scheme, :status) is
    // the request or status line, which method, url and status set; a captured one copied into
    // an edit is left out rather than failing the exchange.
    if (typeof name === 'string' && /^:[a-z]+$/.test(name)) return;
    if (typeof name !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new ModifiedMessageError(`not a header name: ${String(name)}`);
    }
    const text = typeof header === 'number' ? String(header) : header;
    if (typeof text !== 'string' || /[\r\n\0]/.test(text)) {
      throw new ModifiedMessageError(`header ${name} needs a single-line string value`);
    }
    flat.push(name, text);
  };
  if (Array.isArray(value)) {
    for (const pair of value) {
      if (!Array.isArray(pair) || pair.length !== 2) {
        throw new ModifiedMessageError('headers as a list are [name, value] pairs');
      }
      push(pair[0], pair[1]);
    }
  } else if (value && typeof value === 'object') {
    for (const [name, header] of Object.entries(value)) {
      for (const one of Array.isArray(header) ? header : [header]) push(name, one);
    }
  } else {
    throw new ModifiedMessageError('headers are [[name, value], …] or {name: value}');
  }
  return flat;
}

function bodyOf(value: unknown): Buffer {
  if (value === null) return Buffer.alloc(0);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value && typeof value === 'object') {
    const body = value as { text?: unknown; base64?: unknown };
    if (typeof body.text === 'string') return Buffer.from(body.text, 'utf8');
    if (typeof body.base64 === 'string') return Buffer.from(body.base64, 'base64');
  }
  throw new ModifiedMessageError('body is a string, {"text": …}, {"base64": …} or null');
}

const DROPPED_WITH_NEW_BODY = new Set(['content-length', 'transfer-encoding']);

/** The held message with the edit applied (headers and body). */
export function applyEdit(held: EditableMessage, edit: Record<string, unknown>): EditableMessage {
  const newHeaders = 'headers' in edit ? headersOf(edit.headers) : null;
  const newBody = 'body' in edit ? bodyOf(edit.body) : null;
  let rawHeaders = newHeaders ?? held.rawHeaders;
  const body = newBody ?? held.body;
  const drop = new Set(DROPPED_WITH_NEW_BODY);
  if (newBody && !newHeaders) drop.add('content-encoding');
  const kept: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string;
    if (drop.has(name.toLowerCase())) continue;
    kept.push(name, rawHeaders[index + 1] as string);
  }
  rawHeaders = kept;
  if (body.length > 0 || newBody) rawHeaders.push('content-length', String(body.length));
  return { rawHeaders, body };
}

export function editedMethod(edit: Record<string, unknown>, held: string): string {
  if (!('method' in edit)) return held;
  if (typeof edit.method !== 'string' || !/^[A-Za-z]{1,20}$/.test(edit.method)) {
    throw new ModifiedMessageError('method is a word of letters');
  }
  return edit.method.toUpperCase();
}

/**
 * The edited URL: relative to the held one, and on the same origin (scheme, host, port): the
 * tunnel or the vetted destination fixed where this exchange may go, so an edit cannot send it
 * anywhere the client could not.
 */
export function editedUrl(edit: Record<string, unknown>, held: URL): URL {
  if (!('url' in edit)) return held;
  if (typeof edit.url !== 'string') throw new ModifiedMessageError('url is a string');
  let url: URL;
  try {
    url = new URL(edit.url, held);
  } catch {
    throw new ModifiedMessageError(`not a URL: ${edit.url}`);
  }
  if (url.origin !== held.origin) {
    throw new ModifiedMessageError(
      `a modified url stays on ${held.origin} (the destination the client asked for)`,
    );
  }
  return url;
}

export function editedStatus(edit: Record<string, unknown>, held: number): number {
  if (!('status' in edit)) return held;
  const status = edit.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new ModifiedMessageError('status is an integer from 200 to 599');
  }
  return status;
}
