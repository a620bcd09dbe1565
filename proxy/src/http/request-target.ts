// Where a request goes, parsed without throwing: absolute-form URLs (RFC 9112 §3.2.2), and
// origin-form inside a tunnel, whose destination the CONNECT fixed. A CONNECT host must be a DNS
// name (at most 253 bytes, labels of letters, digits, `-` and `_`) or an IP literal: anything
// else could smuggle a path into the URL built from it (`127.0.0.1/.allowed.test`) and pass the
// destination check under a name it does not go to.
import { isIP } from 'node:net';
import { hostForUrl } from '../connection-info.ts';

const MAX_HOST_LENGTH = 253;

function parse(raw: string): URL | null {
  try {
    const url = new URL(raw);
    return url.hostname.length <= MAX_HOST_LENGTH + 2 ? url : null; // +2: IPv6 brackets
  } catch {
    return null;
  }
}

/** An absolute-form target (`http://host/path`), or null for anything else. */
export function absoluteTarget(raw: string): URL | null {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? parse(raw) : null;
}

/**
 * The URL of a request made inside a tunnel. Origin-form is the norm; an absolute-form target
 * keeps only its path and query (the tunnel decides the destination); `*` and the rest are null.
 */
export function tunnelTarget(
  target: { host: string; port: number; scheme: 'http' | 'https' },
  raw: string,
): URL | null {
  const origin = `${target.scheme}://${hostForUrl(target.host)}:${target.port}`;
  const absolute = raw.startsWith('/') ? null : absoluteTarget(raw);
  if (!raw.startsWith('/') && !absolute) return null;
  const url = parse(
    absolute ? `${origin}${absolute.pathname}${absolute.search}` : `${origin}${raw}`,
  );
  // The URL must still name the tunnel's destination, whatever the request line held.
  return url && sameHost(url.hostname, target.host) ? url : null;
}

function sameHost(urlHostname: string, host: string): boolean {
  const bare = urlHostname.replace(/^\[|\]$/g, '');
  if (isIP(host) === 6) return isIP(bare) === 6; // the URL parser compresses IPv6 literals
  return bare === host.toLowerCase() || (isIP(host) === 4 && bare === host);
}

const DNS_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** A CONNECT host the proxy will dial: a DNS name or an IP literal, nothing else. */
export function acceptableHost(host: string): boolean {
  return isIP(host) !== 0 || DNS_NAME.test(host);
}
