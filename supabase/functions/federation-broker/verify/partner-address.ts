// Which hosts a partner URL (backend_base_url, jwks_url) may reach: public ones only, so an
// onboarding mistake or a hostile record cannot point the broker at loopback, private networks
// or the cloud metadata address (reference A7 item 16). Pure, so every range is unit-tested.

/** IPv4 ranges that are not the public internet (RFC 6890), as [first octets, prefix length]. */
const NON_PUBLIC_IPV4: ReadonlyArray<[number, number]> = [
  [0x00000000, 8], // "this network", 0.0.0.0
  [0x0a000000, 8], // RFC 1918
  [0x64400000, 10], // CGNAT, RFC 6598
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // link-local, incl. 169.254.169.254 (cloud metadata)
  [0xac100000, 12], // RFC 1918
  [0xc0000000, 24], // IETF protocol assignments
  [0xc0a80000, 16], // RFC 1918
  [0xc6120000, 15], // benchmarking
  [0xe0000000, 3], // multicast, reserved, broadcast
];
const LOOPBACK_IPV4: [number, number] = [0x7f000000, 8];

/** Names that resolve inside the host or the site, never to a partner. */
const NON_PUBLIC_NAME = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)\.?$/i;

function parseIpv4(text: string): number | undefined {
  const parts = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!parts) return undefined;
  const octets = parts.slice(1).map(Number);
  if (octets.some((octet) => octet > 255)) return undefined;
  return octets.reduce((value, octet) => value * 256 + octet, 0);
}

function inRange(address: number, [base, prefix]: [number, number]): boolean {
  const size = 2 ** (32 - prefix);
  return address >= base && address < base + size;
}

/** The eight 16-bit groups of an IPv6 address (dotted IPv4 tail allowed), or undefined. */
function parseIpv6(text: string): number[] | undefined {
  let body = text;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (dotted) {
    const v4 = parseIpv4(dotted[1] as string);
    if (v4 === undefined) return undefined;
    body = `${body.slice(0, -dotted[1]!.length)}${(v4 >>> 16).toString(16)}:${
      (v4 & 0xffff).toString(16)
    }`;
  }
  if (!/^[0-9a-f:]+$/i.test(body)) return undefined;
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (groups.some((group) => !/^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  return groups.map((group) => Number.parseInt(group, 16));
}

function isPublicIpv4(address: number, allowLoopback: boolean): boolean {
  if (allowLoopback && inRange(address, LOOPBACK_IPV4)) return true;
  return !NON_PUBLIC_IPV4.some((range) => inRange(address, range));
}

function isPublicIpv6(groups: number[], allowLoopback: boolean): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embeddedV4 = g6 * 0x10000 + g7;
  const leadingZeros = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64) reach the embedded IPv4 address.
  if (leadingZeros && g5 === 0xffff) return isPublicIpv4(embeddedV4, allowLoopback);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return isPublicIpv4(embeddedV4, allowLoopback);
  }
  if (leadingZeros && g5 === 0 && g6 === 0) {
    // :: (unspecified) and ::1 (loopback).
    return allowLoopback && g7 === 1;
  }
  if ((g0 & 0xfe00) === 0xfc00) return false; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return false; // link-local fe80::/10
  if ((g0 & 0xff00) === 0xff00) return false; // multicast
  return true;
}

/**
 * True when `hostname` (a URL's hostname: IPv6 in brackets, IPv4 already normalised by the URL
 * parser) is a public address or a name that is not site-local. `allowLoopback` is the local
 * stack's exception for the tests' loopback stand-ins; it never admits private networks.
 */
export function isPublicPartnerHost(hostname: string, allowLoopback: boolean): boolean {
  const host = hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) {
    const groups = parseIpv6(host.slice(1, -1));
    return groups !== undefined && isPublicIpv6(groups, allowLoopback);
  }
  const v4 = parseIpv4(host);
  if (v4 !== undefined) return isPublicIpv4(v4, allowLoopback);
  if (host.length === 0 || host.endsWith('.')) return false;
  if (NON_PUBLIC_NAME.test(host)) return allowLoopback && /(^|\.)localhost$/.test(host);
  return true;
}

/** The same rule for an address a DNS lookup returned (no brackets around IPv6). */
export function isPublicResolvedAddress(address: string, allowLoopback: boolean): boolean {
  return address.includes(':')
    ? isPublicPartnerHost(`[${address}]`, allowLoopback)
    : isPublicPartnerHost(address, allowLoopback);
}
