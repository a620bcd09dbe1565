// Where the proxy may connect on a client's behalf, against SSRF (docs/proxy.md "Listeners",
// Destinations). Entries are CIDRs, host patterns (`localhost`, `*.internal.example`) and the
// keyword `public`: any destination whose address is not special-use (special-addresses.ts:
// loopback, private, link-local, metadata...). Unset means `public` alone, so by default nobody
// reaches our own services (the API on 127.0.0.1, the database, the cloud metadata endpoint)
// through the proxy.
//
// A destination passes in two steps. Its name: an IP literal in any spelling is the address it
// names; a DNS name must match a listed pattern, or `public` must be listed (then its address
// decides). Its address: every address a DNS name resolves to must be in a listed CIDR or, under
// `public`, not special; a name matching a listed pattern is trusted wherever it resolves (the
// operator named it). The address check runs inside the lookup every outbound connect uses, so
// the address checked is the one connected to (no DNS rebinding between check and connect).
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { AddressList } from './address-list.ts';
import { addressOf, isSpecialAddress } from './special-addresses.ts';

export const PUBLIC_DESTINATIONS = 'public';

export class DestinationRefused extends Error {
  override name = 'DestinationRefused';
  readonly code = 'EDESTINATIONREFUSED';
}

export class DestinationPolicy {
  private readonly addresses: AddressList;
  private readonly names: Array<(host: string) => boolean> = [];
  private readonly publicAllowed: boolean;

  constructor(entries: string[] | undefined) {
    const list = entries ?? [PUBLIC_DESTINATIONS];
    this.publicAllowed = list.includes(PUBLIC_DESTINATIONS);
    const isAddress = (entry: string) => isIP(entry.split('/')[0] as string) !== 0;
    this.addresses = new AddressList(list.filter(isAddress));
    for (const entry of list.filter((item) => !isAddress(item) && item !== PUBLIC_DESTINATIONS)) {
      if (entry.startsWith('*.')) {
        const suffix = entry.slice(1).toLowerCase();
        this.names.push((host) => host.endsWith(suffix));
      } else {
        const name = entry.toLowerCase();
        this.names.push((host) => host === name);
      }
    }
  }

  /** An address (canonical form) the proxy may connect to. */
  allowsAddress(address: string): boolean {
    return this.addresses.allows(address) || (this.publicAllowed && !isSpecialAddress(address));
  }

  private listedName(host: string): boolean {
    const name = host.toLowerCase().replace(/\.$/, '');
    return this.names.some((matches) => matches(name));
  }

  /**
   * The check before any connection, without DNS: an IP literal (any spelling) by its address,
   * a name by the patterns or `public`. A name that passes is checked again by address when the
   * connect resolves it (`lookup`).
   */
  allows(host: string): boolean {
    const address = addressOf(host);
    if (address !== null) return this.allowsAddress(address);
    return this.publicAllowed || this.listedName(host);
  }

  /**
   * `allows`, then for a name not trusted by pattern its resolved addresses: so a request for a
   * name pointing at a refused address is answered 403 rather than failing at connect time.
   */
  async permits(host: string): Promise<boolean> {
    if (!this.allows(host)) return false;
    if (addressOf(host) !== null || this.listedName(host)) return true;
    try {
      const resolved = await dns.promises.lookup(host, { all: true });
      return resolved.every((entry) => this.allowsAddress(entry.address));
    } catch {
      return true; // unresolvable: the connect fails on its own (502), nothing is reached
    }
  }

  /**
   * The DNS lookup for every outbound connection: it resolves, refuses the whole name when any
   * address it resolves to is refused, and hands the connect exactly the addresses it checked.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const trusted = this.listedName(hostname);
      const refused = addresses.find(
        (entry) => !trusted && !this.allowsAddress(addressOf(entry.address) ?? entry.address),
      );
      if (refused || addresses.length === 0) {
        return callback(
          new DestinationRefused(`destination ${hostname} is not allowed by this proxy`),
          '',
          0,
        );
      }
      if (options.all) return callback(null, addresses as never);
      const first = addresses[0] as dns.LookupAddress;
      callback(null, first.address, first.family);
    });
  };
}
