// The breakpoint pattern syntax (docs/proxy.md "Breakpoints"): method list, scheme, host and port
// wildcards, path with or without query, phases, and entries that are skipped with a reason.
import { describe, expect, it } from 'vitest';
import {
  compileBreakpoints,
  compilePattern,
  matches,
  PatternError,
} from '../src/breakpoints/patterns.ts';

const hit = (
  pattern: unknown,
  method: string,
  url: string,
  phase: 'request' | 'response' = 'request',
) => matches(compilePattern(pattern), phase, { method, url: new URL(url) });

describe('breakpoint patterns', () => {
  it('match host and path with * wildcards, host without case, path with', () => {
    expect(
      hit('api.shop.example/v1/checkout*', 'POST', 'https://API.shop.example/v1/checkout/42'),
    ).toBe(true);
    expect(
      hit('api.shop.example/v1/checkout*', 'POST', 'https://api.shop.example/v1/Checkout'),
    ).toBe(false);
    expect(hit('*.shop.example', 'GET', 'http://cdn.shop.example/any/path?q=1')).toBe(true);
    expect(hit('*.shop.example', 'GET', 'http://shop.example.evil/')).toBe(false);
    expect(hit('api.shop.example/v1/cart', 'GET', 'https://api.shop.example/v1/cart/x')).toBe(
      false,
    );
  });

  it('filter by methods, scheme and port', () => {
    expect(hit('POST,PUT a.example/x', 'put', 'http://a.example/x')).toBe(true);
    expect(hit('POST,PUT a.example/x', 'GET', 'http://a.example/x')).toBe(false);
    expect(hit('https://a.example', 'GET', 'http://a.example/')).toBe(false);
    expect(hit('https://a.example', 'GET', 'https://a.example/')).toBe(true);
    expect(hit('a.example:8443/', 'GET', 'https://a.example:8443/')).toBe(true);
    expect(hit('a.example:8443/', 'GET', 'https://a.example/')).toBe(false);
    expect(hit('a.example:443/', 'GET', 'https://a.example/')).toBe(true);
    expect(hit('a.example:*/x', 'GET', 'http://a.example:9/x')).toBe(true);
  });

  it('compare the query only when the pattern has one', () => {
    expect(hit('a.example/search', 'GET', 'http://a.example/search?q=1')).toBe(true);
    expect(hit('a.example/search?q=*', 'GET', 'http://a.example/search?q=1')).toBe(true);
    expect(hit('a.example/search?q=*', 'GET', 'http://a.example/search?page=1')).toBe(false);
  });

  it('hold in the phases they name (request by default)', () => {
    expect(hit('a.example', 'GET', 'http://a.example/', 'response')).toBe(false);
    expect(
      hit({ pattern: 'a.example', phase: 'response' }, 'GET', 'http://a.example/', 'response'),
    ).toBe(true);
    expect(
      hit({ pattern: 'a.example', phase: 'both' }, 'GET', 'http://a.example/', 'request'),
    ).toBe(true);
    expect(
      hit({ pattern: 'a.example', phase: 'both' }, 'GET', 'http://a.example/', 'response'),
    ).toBe(true);
  });

  it('treat regular-expression characters literally', () => {
    expect(hit('a.example/(x)+', 'GET', 'http://a.example/(x)+')).toBe(true);
    expect(hit('a.example/(x)+', 'GET', 'http://a.example/xx')).toBe(false);
    expect(hit('a.example', 'GET', 'http://aXexample/')).toBe(false);
  });

  it('skip entries that are not patterns, and disabled ones, saying why', () => {
    const { patterns, problems } = compileBreakpoints([
      'ok.example',
      { pattern: 'off.example', enabled: false },
      { pattern: 'x.example', phase: 'sometimes' },
      { pattern: '' },
      42,
      'has space/in path',
      'a.example:70000/',
    ]);
    expect(patterns.map((pattern) => pattern.source)).toEqual(['ok.example']);
    expect(problems).toHaveLength(5);
    expect(compileBreakpoints({ not: 'a list' }).problems).toEqual(['breakpoints is not a list']);
    expect(() => compilePattern({ nope: 1 })).toThrow(PatternError);
  });
});
