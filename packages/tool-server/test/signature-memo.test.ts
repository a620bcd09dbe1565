// The memo of checked access-token signatures (src/http/signature-memo.ts): a token is taken from
// it only for the host it was checked for and only until its `exp`; the memo stays bounded.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SignatureMemo } from '../src/http/signature-memo.ts';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const seconds = (ms: number) => Math.floor(ms / 1000);

beforeEach(() => {
  vi.useFakeTimers({ now: NOW });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('SignatureMemo', () => {
  it('answers a remembered token for its own host only', () => {
    const memo = new SignatureMemo();
    const claims = { sub: 'u', exp: seconds(NOW) + 60 };
    memo.remember('https://a.example', 'tok', claims);
    expect(memo.claimsOf('https://a.example', 'tok')).toBe(claims);
    expect(memo.claimsOf('https://b.example', 'tok')).toBeUndefined();
    expect(memo.claimsOf('https://a.example', 'tok2')).toBeUndefined();
  });

  it('forgets a token the second it expires, and never keeps one without exp', () => {
    const memo = new SignatureMemo();
    memo.remember('o', 'tok', { sub: 'u', exp: seconds(NOW) + 2 });
    memo.remember('o', 'endless', { sub: 'u' });
    expect(memo.claimsOf('o', 'endless')).toBeUndefined();
    vi.advanceTimersByTime(1_999);
    expect(memo.claimsOf('o', 'tok')).toBeDefined();
    vi.advanceTimersByTime(1);
    expect(memo.claimsOf('o', 'tok')).toBeUndefined();
  });

  it('holds at most its capacity, forgetting the longest remembered first', () => {
    const memo = new SignatureMemo(3);
    const exp = seconds(NOW) + 60;
    for (const token of ['t1', 't2', 't3', 't4']) memo.remember('o', token, { exp });
    expect(memo.claimsOf('o', 't1')).toBeUndefined();
    for (const token of ['t2', 't3', 't4']) expect(memo.claimsOf('o', token)).toEqual({ exp });
  });
});
