// The per-device auto-config file (002 §4.4): `http://<port>.{proxy_domain}/`, `/proxy.pac` and
// `/wpad.dat` give the same body, which sends everything to the device's dedicated port and falls
// back to DIRECT so the device stays online when the proxy is unreachable.

/** The content type browsers and OSes expect for PAC files (MDN "Proxy Auto-Configuration"). */
export const PAC_CONTENT_TYPE = 'application/x-ns-proxy-autoconfig';

export const PAC_PATHS = new Set(['/', '/proxy.pac', '/wpad.dat']);

export function pacBody(proxyDomain: string, port: number): string {
  return [
    'function FindProxyForURL(url, host) {',
    `  return "PROXY ${proxyDomain}:${port}; DIRECT";`,
    '}',
    '',
  ].join('\n');
}

/**
 * The label before `.{proxy_domain}` in a Host header (port stripped), or null when the host is
 * not a subdomain of the proxy domain.
 */
export function pacSubdomain(hostHeader: string | undefined, proxyDomain: string): string | null {
  if (!hostHeader) return null;
  const host = hostHeader.replace(/:\d+$/, '').toLowerCase();
  const suffix = `.${proxyDomain.toLowerCase()}`;
  if (!host.endsWith(suffix)) return null;
  return host.slice(0, -suffix.length);
}
