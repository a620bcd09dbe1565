// Where a request goes, parsed without throwing: absolute-form URLs (RFC 9112 §3.2.2), and
// origin-form inside a tunnel, whose destination the CONNECT fixed. A host name longer than DNS
// allows (253) is refused here: it could only be an attack, and it would not fit the capture
// indexes.
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
  if (raw.startsWith('/')) return parse(`${origin}${raw}`);
  const absolute = absoluteTarget(raw);
  return absolute ? parse(`${origin}${absolute.pathname}${absolute.search}`) : null;
}

export function acceptableHost(host: string): boolean {
  return host.length > 0 && host.length <= MAX_HOST_LENGTH;
}
