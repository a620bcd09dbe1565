// The SNI name the proxy sends to an origin (request-upstream.ts): the client's, else the target's
// host name, and never an address (RFC 6066 §3; Node's DEP0123 warns on one).
import { describe, expect, it } from 'vitest';
import { upstreamServername } from '../src/http/request-upstream.ts';

describe('upstreamServername', () => {
  it('sends the name the client asked for, even to an origin reached by address', () => {
    expect(upstreamServername('api.example', '203.0.113.7')).toBe('api.example');
  });

  it("sends the target's host name when the client named none", () => {
    expect(upstreamServername(null, 'api.example')).toBe('api.example');
    expect(upstreamServername(undefined, 'localhost')).toBe('localhost');
  });

  it('sends no name for an address, IPv4 or IPv6, from the target or the client', () => {
    expect(upstreamServername(null, '127.0.0.1')).toBeUndefined();
    expect(upstreamServername(undefined, '::1')).toBeUndefined();
    expect(upstreamServername('198.51.100.1', 'api.example')).toBeUndefined();
  });
});
