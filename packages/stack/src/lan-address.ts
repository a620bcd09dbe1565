// Which address of this machine phones on the LAN reach (`--lan [ADDRESS]`, docs/devices.md): by
// default the IPv4 address of the interface the default route leaves by, as Expo's CLI and Proxyman
// pick the address they show; or the address given, which must be one of this machine's. The subnet
// of that interface is what the proxy's allowlist admits in LAN mode.
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { StackError } from './errors.ts';

export interface LanAddress {
  address: string;
  /** The interface holding it (`wlan0`, `eth0`). */
  interfaceName: string;
  /** Its subnet (`192.168.1.0/24`): who may use the proxy. */
  cidr: string;
  /** How it was chosen, for the start-up line that says so. */
  chosenBy: 'default route' | 'given';
}

/** `192.168.1.20` with `255.255.255.0` → `192.168.1.0/24`. */
function subnetOf(address: string, netmask: string): string {
  const octets = (dotted: string) => dotted.split('.').map(Number);
  const mask = octets(netmask);
  const network = octets(address).map((octet, index) => octet & (mask[index] ?? 0));
  const prefix = mask.reduce(
    (bits, octet) => bits + octet.toString(2).replaceAll('0', '').length,
    0,
  );
  return `${network.join('.')}/${prefix}`;
}

/** The default route's interface from Linux's routing table, lowest metric first. */
function defaultRouteInterface(routeTable: string): string | undefined {
  const routes = routeTable
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 8 && fields[1] === '00000000' && fields[7] === '00000000')
    .map((fields) => ({ name: fields[0] as string, metric: Number(fields[6]) }))
    .sort((a, b) => a.metric - b.metric);
  return routes[0]?.name;
}

function readRouteTable(): string {
  try {
    return readFileSync('/proc/net/route', 'utf8');
  } catch {
    return '';
  }
}

/** The LAN address to serve phones on: `given`, or the default route's (see the file comment). */
export function resolveLanAddress(
  given: string | undefined,
  interfaces = networkInterfaces(),
  routeTable = readRouteTable(),
): LanAddress {
  const candidates = Object.entries(interfaces).flatMap(([interfaceName, addresses]) =>
    (addresses ?? [])
      .filter((address) => address.family === 'IPv4' && !address.internal)
      .map((address) => ({
        interfaceName,
        address: address.address,
        cidr: subnetOf(address.address, address.netmask),
      })),
  );
  if (given !== undefined) {
    if (!isIPv4(given)) {
      throw new StackError(
        'bad_option',
        `--lan takes an IPv4 address of this machine, not ${given}`,
      );
    }
    const found = candidates.find((candidate) => candidate.address === given);
    if (!found) {
      const known = candidates.map((candidate) => candidate.address).join(', ') || 'none';
      throw new StackError(
        'bad_option',
        `${given} is not an address of this machine (its LAN addresses: ${known})`,
      );
    }
    return { ...found, chosenBy: 'given' };
  }
  const routeInterface = defaultRouteInterface(routeTable);
  const found = candidates.find((candidate) => candidate.interfaceName === routeInterface);
  if (!found) {
    const known = candidates.map((candidate) => candidate.address).join(', ') || 'none';
    throw new StackError(
      'bad_option',
      `no IPv4 address on a default route to serve phones on; pass one: --lan ADDRESS (this ` +
        `machine's: ${known})`,
    );
  }
  return { ...found, chosenBy: 'default route' };
}
