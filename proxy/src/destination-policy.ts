// Where the proxy may connect on a client's behalf. Unset, it reaches any destination (a capture
// proxy's job); set, only the listed ones: CIDRs match IP-literal targets and host patterns
// (`localhost`, `*.internal.example`) match names, without a DNS lookup, so a refused name never
// leaves the machine. Deployments use it to keep clients off internal networks; tests use it to
// keep a browser's background requests on loopback.
import { isIP } from 'node:net';
import { AddressList } from './address-list.ts';

export class DestinationPolicy {
  private readonly addresses: AddressList;
  private readonly names: Array<(host: string) => boolean> = [];
  private readonly open: boolean;

  constructor(entries: string[] | undefined) {
    this.open = entries === undefined;
    const isAddress = (entry: string) => isIP(entry.split('/')[0] as string) !== 0;
    this.addresses = new AddressList((entries ?? []).filter(isAddress));
    for (const entry of (entries ?? []).filter((entry) => !isAddress(entry))) {
      if (entry.startsWith('*.')) {
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
    if (isIP(bare) !== 0) return this.addresses.allows(bare);
    return this.names.some((matches) => matches(bare));
  }
}
