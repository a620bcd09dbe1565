// Where the proxy may connect on a client's behalf. Unset, it reaches any destination (a capture
// proxy's job); set, only the listed ones: CIDRs match IP-literal targets and host patterns
// (`localhost`, `*.internal.example`) match names, without a DNS lookup, so a refused name never
// leaves the machine. Deployments use it to keep clients off internal networks; tests use it to
// keep a browser's background requests on loopback.
import { BlockList, isIP } from 'node:net';

export class DestinationPolicy {
  private readonly addresses = new BlockList();
  private readonly names: Array<(host: string) => boolean> = [];
  private readonly open: boolean;

  constructor(entries: string[] | undefined) {
    this.open = entries === undefined;
    for (const entry of entries ?? []) {
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const family = isIP(address);
      if (family !== 0) {
        const type = family === 6 ? 'ipv6' : 'ipv4';
        if (prefix === undefined) this.addresses.addAddress(address, type);
        else this.addresses.addSubnet(address, Number(prefix), type);
      } else if (entry.startsWith('*.')) {
        const suffix = entry.slice(1).toLowerCase();
        this.names.push((host) => host.endsWith(suffix));
      } else {
        const name = entry.toLowerCase();
        this.names.push((host) => host === name);
      }
    }
  }

  allows(host: string): boolean {
    if (this.open) return true;
    const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
    const family = isIP(bare);
    if (family !== 0) return this.addresses.check(bare, family === 6 ? 'ipv6' : 'ipv4');
    return this.names.some((matches) => matches(bare));
  }
}
