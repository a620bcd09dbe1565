// The proxy's idea of itself: address forms that name this host, and the lookup that refuses a
// name resolving here when the port is one of the proxy's (so no alias forwards to itself).
// `localhost` resolves from /etc/hosts: no query leaves the machine.
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isOwnAddress, lookupRefusingSelf, normalizeHost } from '../src/own-addresses.ts';

const context = {
  proxyDomain: 'proxy.test',
  bindHost: '127.0.0.1',
  listening: (port: number) => port === 8888,
};

describe('own addresses', () => {
  it('normalizes IPv4-mapped, bracketed, upper-case and trailing-dot forms', () => {
    expect(normalizeHost('[::ffff:7f00:1]')).toBe('127.0.0.1');
    expect(normalizeHost('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeHost('LocalHost.')).toBe('localhost');
  });

  it('knows the proxy by its domain on any port and by local addresses on its ports', () => {
    expect(isOwnAddress('20001.proxy.test', 80, context)).toBe(true);
    expect(isOwnAddress('0.0.0.0', 8888, context)).toBe(true);
    expect(isOwnAddress('127.0.0.9', 8888, context)).toBe(true);
    expect(isOwnAddress('127.0.0.1', 3000, context)).toBe(false);
    expect(isOwnAddress('example.com', 8888, context)).toBe(false);
  });

  it('refuses, on its own ports only, a name that resolves to this host', async () => {
    const base = dns.lookup as unknown as LookupFunction;
    expect(lookupRefusingSelf(3000, context, base)).toBe(base);
    const lookup = lookupRefusingSelf(8888, context, base);
    const error = await new Promise<Error | null>((resolve) =>
      lookup?.('localhost', {}, (failure) => resolve(failure)),
    );
    expect(error?.message).toBe('the destination is this proxy');
  });
});
