// Which destinations are this proxy itself, so its management URLs are answered locally and
// never forwarded (002 §4.3): its domain and any `<label>.{proxy_domain}`, and a listening port
// on any address that reaches this host — loopback (all of 127/8 and ::1), the wildcard
// addresses, IPv4-mapped forms, and every interface address — with or without a trailing dot.
import type dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { pacSubdomain } from './devices/pac.ts';

/** `[::ffff:7f00:1]`, `::ffff:127.0.0.1`, `Localhost.` → `127.0.0.1`, `127.0.0.1`, `localhost`. */
export function normalizeHost(host: string): string {
  let bare = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const mappedDotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mappedDotted) bare = mappedDotted[1] as string;
  const mappedHex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(bare);
  if (mappedHex) {
    const high = Number.parseInt(mappedHex[1] as string, 16);
    const low = Number.parseInt(mappedHex[2] as string, 16);
    bare = [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return bare;
}

function reachesThisHost(host: string, bindHost: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === bindHost || host === '0.0.0.0' || host === '::' || host === '::1') return true;
  if (isIP(host) === 4 && host.startsWith('127.')) return true;
  return Object.values(networkInterfaces()).some((addresses) =>
    (addresses ?? []).some((address) => normalizeHost(address.address) === host),
  );
}

/**
 * For a destination on one of the proxy's ports: `lookup` (the destination policy's) that also
 * refuses a name resolving to this host (a hostname, `*.nip.io`, a name pointed here on purpose),
 * so such a request is never forwarded to the proxy itself. `lookup` alone for any other port.
 */
export function lookupRefusingSelf(
  port: number,
  context: { bindHost: string; listening(port: number): boolean },
  lookup: LookupFunction,
): LookupFunction {
  if (!context.listening(port)) return lookup;
  const bindHost = normalizeHost(context.bindHost);
  const refuse = (address: string) => reachesThisHost(normalizeHost(address), bindHost);
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const entries = addresses as unknown as dns.LookupAddress[];
      if (entries.some((entry) => refuse(entry.address))) {
        return callback(new Error('the destination is this proxy'), '', 0);
      }
      if (options.all) return callback(null, entries as never);
      const first = entries[0] as dns.LookupAddress;
      callback(null, first.address, first.family);
    });
  };
}

export function isOwnAddress(
  hostname: string,
  port: number,
  context: { proxyDomain: string | undefined; bindHost: string; listening(port: number): boolean },
): boolean {
  const host = normalizeHost(hostname);
  const domain = context.proxyDomain;
  if (domain && (host === domain || pacSubdomain(host, domain) !== null)) return true;
  return context.listening(port) && reachesThisHost(host, normalizeHost(context.bindHost));
}
