// A list of addresses and CIDRs, IPv4 and IPv6, with IPv4-mapped addresses compared as the IPv4
// they are: the clients allowed to send traffic (002 §5: "egress is gated by a source-IP
// allowlist") and the IP part of the destinations the proxy may reach.
import { BlockList, isIP } from 'node:net';

export class AddressList {
  private readonly list = new BlockList();

  constructor(entries: string[]) {
    for (const entry of entries) {
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(prefix), family);
    }
  }

  /** True for an address on the list; false for a name, nothing, or an address off it. */
  allows(address: string | null | undefined): boolean {
    if (!address) return false;
    const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
    const family = isIP(plain);
    return family !== 0 && this.list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  }
}
