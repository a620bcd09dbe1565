// Which clients may send traffic through the proxy (002 §5: "egress is gated by a source-IP
// allowlist"): addresses and CIDRs, IPv4 and IPv6, with IPv4-mapped client addresses compared as
// the IPv4 they are.
import { BlockList, isIP } from 'node:net';

export class ClientAllowlist {
  private readonly list = new BlockList();

  constructor(entries: string[]) {
    for (const entry of entries) {
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(prefix), family);
    }
  }

  allows(address: string | null | undefined): boolean {
    if (!address) return false;
    const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
    return this.list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  }
}
