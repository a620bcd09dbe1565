// Certificate-bundle credentials as HTTP Basic (RFC 7617): `base64(<bundle id>:<secret>)`, sent
// as Authorization to POST /allocate (002 §4.4) and as Proxy-Authorization on a device port.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface BundleCredentials {
  bundleId: string;
  secret: string;
}

/** The bundle id and secret of a `Basic …` header value, or null for anything else. */
export function bundleCredentials(header: string | undefined): BundleCredentials | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const bundleId = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  if (!UUID.test(bundleId) || secret.length === 0 || secret.length > 200) return null;
  return { bundleId, secret };
}
