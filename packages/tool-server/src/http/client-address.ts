// The client's address for rate limits: the socket's peer, or, behind `trustedProxyHops` proxies
// that append to X-Forwarded-For, the entry those proxies wrote (counted from the right, so a
// client cannot choose it by sending its own header).

export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trustedProxyHops: number,
): string {
  if (trustedProxyHops > 0 && forwardedFor) {
    const hops = forwardedFor
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
    const entry = hops[hops.length - trustedProxyHops];
    if (entry) return entry;
  }
  return socketAddress ?? 'unknown';
}
