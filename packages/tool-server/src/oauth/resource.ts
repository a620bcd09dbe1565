// RFC 8707 resource indicators. This server is one protected resource per host: its canonical URI
// is the origin called (MCP spec: lowercase scheme and host, no trailing slash). Clients spell it
// `https://host` or `https://host/` (Claude sends the slash), so both name us; any other path,
// host, query or a fragment does not.

/** The canonical form of a resource URI, or undefined when it is not an absolute URI. */
export function canonicalResource(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.hash || value.includes('#')) return undefined;
  const path = url.pathname === '/' ? '' : url.pathname;
  return `${url.protocol}//${url.host}${path}${url.search}`;
}

/** True when `requested` names the resource served at `origin`. */
export function namesThisResource(requested: string, origin: string): boolean {
  return canonicalResource(requested) === canonicalResource(origin);
}
