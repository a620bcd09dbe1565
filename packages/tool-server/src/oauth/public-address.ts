// Which addresses an outbound fetch of a client's metadata document may reach: public unicast
// only, so a client_id URL cannot make us probe loopback, the private network, link-local cloud
// metadata (169.254.169.254) or other special-purpose ranges (SSRF; RFC 6890 registries).
import { BlockList, isIP } from 'node:net';

const special = new BlockList();
for (const [prefix, length] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  special.addSubnet(prefix, length, 'ipv4');
}
for (const [prefix, length] of [
  // ::/96 holds the unspecified, loopback and deprecated IPv4-compatible forms (::7f00:1).
  ['::', 96],
  // SIIT-translated IPv4 (::ffff:0:a.b.c.d), RFC 6052-style forms are below.
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  // Deprecated site-local (RFC 3879), still routed privately by some networks.
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  special.addSubnet(prefix, length, 'ipv6');
}

/** `::ffff:a.b.c.d` is the IPv4 address it maps (checked as IPv4: BlockList would match every IPv4). */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped?.[1] ?? address;
}

export function isPublicAddress(address: string): boolean {
  const plain = unmapped(address);
  const family = isIP(plain);
  if (family === 0) return false;
  return !special.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}
