// Which IP addresses the proxy must not reach unless told to (SSRF; docs/proxy.md "Listeners",
// Destinations): loopback, private, link-local (169.254.169.254 and fd00:ec2::254, the cloud
// metadata services, among them), shared, reserved, documentation, multicast and the IPv6 forms
// that carry an IPv4 address (RFC 6890 registries; the tool server's metadata-document guard
// imports this list). Also the spellings a host can take: integer and octal/hex dotted IPv4
// (inet_aton, which getaddrinfo and so every connect accept: `2130706433`, `0177.1`, `0x7f.0.0.1`)
// and IPv4-mapped IPv6 in either notation (`::ffff:127.0.0.1`, `::ffff:7f00:1`), normalized before
// the check.
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
  // Unspecified, loopback and the deprecated IPv4-compatible forms (::7f00:1).
  ['::', 96],
  // (IPv4-mapped ::ffff:0:0/96 is not listed: BlockList would then match every IPv4 address.
  // unmapped() checks those as the IPv4 they carry.)
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  special.addSubnet(prefix, length, 'ipv6');
}

/** One inet_aton part: decimal, octal with a leading 0, or hex with 0x. */
function legacyPart(part: string): number | null {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : Number.parseInt(part, 16);
  if (/^0[0-7]*$/.test(part)) return Number.parseInt(part, 8);
  if (/^[1-9][0-9]*$/.test(part)) return Number(part);
  return null;
}

/**
 * `a`, `a.b`, `a.b.c` and `a.b.c.d` in any base, as inet_aton reads them (the last part fills
 * the remaining bytes), in dotted decimal; null when the host is not such a number.
 */
export function legacyIPv4(host: string): string | null {
  const parts = host.replace(/\.$/, '').split('.');
  if (parts.length > 4 || parts.some((part) => part === '')) return null;
  const values = parts.map(legacyPart);
  if (values.some((value) => value === null || !Number.isFinite(value))) return null;
  const numbers = values as number[];
  const last = numbers.pop() as number;
  if (numbers.some((value) => value > 255)) return null;
  if (last >= 2 ** (8 * (4 - numbers.length))) return null;
  let value = last;
  numbers.forEach((part, index) => {
    value += part * 2 ** (8 * (3 - index));
  });
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** An IPv4-mapped IPv6 address (`::ffff:a.b.c.d` or `::ffff:xxxx:xxxx`) as its IPv4. */
function unmapped(address: string): string {
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted && isIP(address) === 6) return dotted[1] as string;
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex && isIP(address) === 6) {
    const high = Number.parseInt(hex[1] as string, 16);
    const low = Number.parseInt(hex[2] as string, 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return address;
}

/**
 * The address a host literal names, in canonical form (brackets, zone and trailing dot removed,
 * mapped IPv6 as IPv4, legacy IPv4 spellings dotted), or null when the host is a DNS name.
 */
export function addressOf(host: string): string | null {
  const bare = host
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .toLowerCase();
  if (isIP(bare) === 6) return unmapped(bare);
  if (isIP(bare) === 4) return bare;
  return legacyIPv4(bare);
}

/** True for an address the proxy reaches only when PROXY_DESTINATIONS lists it. */
export function isSpecialAddress(address: string): boolean {
  const plain = unmapped(address.toLowerCase());
  const family = isIP(plain);
  if (family === 0) return true;
  return special.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}
