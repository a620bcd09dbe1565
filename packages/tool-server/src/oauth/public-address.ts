// Which addresses an outbound fetch of a client's metadata document may reach: public unicast
// only, so a client_id URL cannot make us probe loopback, the private network, link-local cloud
// metadata (169.254.169.254) or other special-purpose ranges (SSRF). One list for the platform:
// the capture proxy's (RFC 6890 registries, every spelling of a mapped address), imported by
// path as the redaction module is, so the two guards cannot drift apart.
import { isSpecialAddress } from '../../../../proxy/src/special-addresses.ts';

export function isPublicAddress(address: string): boolean {
  return !isSpecialAddress(address);
}
