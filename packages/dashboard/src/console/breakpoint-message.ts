// The editor's starting point for Modify on a held breakpoint: the message as the proxy captured it
// (scheme, host, path, requestHeaders, requestBody, …; proxy/src/http/forward-held.ts) turned into
// the only shape the database accepts in `modified_message` (docs/proxy.md "Breakpoints": a request
// takes method, url, headers, body; a response status, headers, body) and the proxy applies
// (proxy/src/breakpoints/modified-message.ts: absent keys keep the held value).

export type BreakpointPhase = 'request' | 'response';

export const MODIFIABLE_KEYS: Record<BreakpointPhase, readonly string[]> = {
  request: ['method', 'url', 'headers', 'body'],
  response: ['status', 'headers', 'body'],
};

/**
 * Headers the proxy sets or drops itself: Content-Length and Transfer-Encoding follow the body it
 * sends, and Proxy-Authorization is captured redacted and never forwarded (hop-by-hop).
 */
const LEFT_TO_THE_PROXY = new Set(['content-length', 'transfer-encoding', 'proxy-authorization']);

function headerPairsOf(value: unknown): Array<[string, string]> | null {
  if (!Array.isArray(value)) return null;
  const pairs: Array<[string, string]> = [];
  for (const pair of value) {
    if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
      return null;
    // HTTP/2 pseudo-headers (:method, :path, :authority, :scheme) are the request line, which
    // method and url set; the proxy would refuse them as header names.
    if (pair[0].startsWith(':')) continue;
    if (!LEFT_TO_THE_PROXY.has(pair[0].toLowerCase())) pairs.push([pair[0], pair[1]]);
  }
  return pairs;
}

/**
 * A captured body as an editable string, or undefined when it cannot be shown faithfully
 * (binary, cut at the capture cap, or decoded from a Content-Encoding the headers still name):
 * then the key is left out and the proxy sends the held bytes.
 */
function editableBody(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value !== 'object') return undefined;
  const body = value as { text?: unknown; truncated?: unknown; contentEncoding?: unknown };
  if (typeof body.text !== 'string' || body.truncated === true || body.contentEncoding)
    return undefined;
  return body.text;
}

/** The held message in the accepted shape, with the held values filled in. */
export function editableMessage(event: {
  phase: BreakpointPhase;
  method: string | null;
  url: string | null;
  message: Record<string, unknown>;
}): Record<string, unknown> {
  const { message } = event;
  const draft: Record<string, unknown> = {};
  if (event.phase === 'request') {
    const method = typeof message.method === 'string' ? message.method : event.method;
    const url = typeof message.url === 'string' ? message.url : event.url;
    if (method) draft.method = method;
    if (url) draft.url = url;
  } else if (typeof message.statusCode === 'number') {
    draft.status = message.statusCode;
  }
  const headers = headerPairsOf(
    event.phase === 'request' ? message.requestHeaders : message.responseHeaders,
  );
  if (headers) draft.headers = headers;
  const body = editableBody(event.phase === 'request' ? message.requestBody : message.responseBody);
  // An empty held body needs no key: absent keeps it (empty), and null would add Content-Length.
  if (typeof body === 'string') draft.body = body;
  return draft;
}
