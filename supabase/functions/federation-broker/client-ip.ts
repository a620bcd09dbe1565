// The client address for rate limits, taken only from the header the trusted proxy in front of
// the broker writes (locally the gateway overwrites X-Forwarded-For with its socket's peer).
// Entries a client sends itself sit to the left of what the proxies append, so the address is
// read `hops` entries from the right, never from the left (reference A5).

export const UNKNOWN_CLIENT_IP = 'unknown';

export function clientIpOf(headers: Headers, headerName: string, hops: number): string {
  const entries = (headers.get(headerName) ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  const entry = entries[entries.length - hops];
  // No trusted entry: every such request shares one bucket, so the limit still holds.
  return entry === undefined ? UNKNOWN_CLIENT_IP : rateLimitKeyOf(entry);
}

/** IPv4 as is; IPv6 by its /64, since one host usually holds a whole /64. */
export function rateLimitKeyOf(address: string): string {
  const unbracketed = address.replace(/^\[|\](:\d+)?$/g, '').replace(/^::ffff:(\d+\.)/i, '$1');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(unbracketed)) return unbracketed;
  if (!/^[0-9a-f:]+$/i.test(unbracketed) || !unbracketed.includes(':')) return UNKNOWN_CLIENT_IP;
  const [head = '', tail = ''] = unbracketed.toLowerCase().split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const missing = unbracketed.includes('::') ? 8 - headGroups.length - tailGroups.length : 0;
  const groups = [...headGroups, ...Array<string>(Math.max(missing, 0)).fill('0'), ...tailGroups];
  if (groups.length !== 8) return UNKNOWN_CLIENT_IP;
  return `${
    groups.slice(0, 4).map((group) => Number.parseInt(group, 16).toString(16)).join(':')
  }::/64`;
}
