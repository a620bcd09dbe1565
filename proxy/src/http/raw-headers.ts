// Header lists as Node gives them (`rawHeaders`: name, value, name, value, … in wire order and
// case): the capture's pairs, the headers forwarded to the next hop, an HTTP/1.1 origin's headers
// as an HTTP/2 response may carry them, and one header's value.
import type http from 'node:http';

/** rawHeaders as [[name, value], …] in wire order and case (HTTP/2 pseudo-headers included). */
export function headerPairs(raw: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index] as string;
    const value = raw[index + 1] as string;
    // A device port's proxy credentials are a certificate bundle's secret (port-guard.ts): the
    // capture keeps the scheme only.
    pairs.push([
      name,
      name.toLowerCase() === 'proxy-authorization' ? value.replace(/\s.*$/s, ' [redacted]') : value,
    ]);
  }
  return pairs;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Fields a Connection header may not remove: they frame the message (RFC 9112 §6) or name its
 * target. Letting `Connection: Content-Length` strip the length would send a body unframed on a
 * shared upstream connection, where the origin reads it as the next request (smuggling).
 */
const FRAMING = new Set(['content-length', 'host']);

/**
 * The headers to send on: hop-by-hop ones and those the Connection header lists removed, and
 * HTTP/2 pseudo-headers turned into what HTTP/1.1 says (`:authority` becomes Host).
 */
export function forwardedHeaders(raw: string[], keep: ReadonlySet<string> = new Set()): string[] {
  const listed = new Set(
    raw
      .filter((_, index) => index % 2 === 0)
      .flatMap((name, index) =>
        name.toLowerCase() === 'connection'
          ? (raw[index * 2 + 1] ?? '').split(',').map((token) => token.trim().toLowerCase())
          : [],
      )
      .filter((name) => !FRAMING.has(name)),
  );
  const out: string[] = [];
  let hasHost = false;
  let authority: string | undefined;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (name === ':authority') authority = raw[index + 1];
    if (name === 'host') hasHost = true;
    if (name.startsWith(':')) continue;
    if (!keep.has(name) && (HOP_BY_HOP.has(name) || listed.has(name))) continue;
    out.push(raw[index] as string, raw[index + 1] as string);
  }
  if (!hasHost && authority !== undefined) out.unshift('host', authority);
  return out;
}

/** Header names HTTP/2 allows once (Node refuses a response repeating them). */
const SINGLE_VALUE = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
  'content-md5',
  'content-range',
  'location',
  'etag',
  'last-modified',
  'expires',
  'age',
  'date',
  'server',
  'retry-after',
  'authorization',
  'max-forwards',
  'from',
  'referer',
  'user-agent',
  'if-modified-since',
  'if-unmodified-since',
  'if-range',
  'access-control-allow-credentials',
  'access-control-max-age',
  'access-control-request-method',
]);

/**
 * An HTTP/1.1 origin's headers as an HTTP/2 response may carry them: names lower-cased, a
 * repeated single-value field kept once (the first, as browsers do), other repeats joined
 * (RFC 9110 §5.3), Set-Cookie kept as a list.
 */
export function http2ResponseHeaders(raw: string[]): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    const value = raw[index + 1] as string;
    const previous = headers[name];
    if (previous === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
    else if (name === 'set-cookie') (previous as string[]).push(value);
    else if (!SINGLE_VALUE.has(name)) headers[name] = `${previous}, ${value}`;
  }
  return headers;
}

/** The first value of a header in a flat raw list. */
export function headerValue(raw: string[], name: string): string | undefined {
  for (let index = 0; index + 1 < raw.length; index += 2) {
    if ((raw[index] as string).toLowerCase() === name) return raw[index + 1];
  }
  return undefined;
}
