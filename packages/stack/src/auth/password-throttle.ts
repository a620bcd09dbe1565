// A per-account slow-down for password sign-in that a guesser cannot turn into a lockout of the
// owner (OWASP Authentication Cheat Sheet, "Account lockout": throttle, do not lock).
// - Each (account, address) pair gets `passwordFailuresPerAddress` free failures; then every
//   further try waits twice as long as the one before (1 s, 2 s, … up to the maximum).
// - Addresses the account has not signed in from ("strangers") also share one gate per account,
//   with `passwordFailuresFromStrangers` free failures: a guesser spread over many addresses is
//   slowed down as a whole. Familiar addresses (a sign-in within `familiarAddressSeconds`) never
//   wait on that gate, so guessing from elsewhere cannot keep the owner out.
// A try that must wait is answered 429 without looking at the password. Accounts are keyed by the
// address as typed (normalised), known or not, so the answers never tell whether one exists.
// State is in memory: a restart forgets it, as it forgets the request limits.
import type { AccountGuards } from './auth-config.ts';
import { authErrors } from './auth-error.ts';

interface Failures {
  count: number;
  lastAt: number;
}

interface AccountState {
  strangers: Failures;
  /** Address → time of its last successful sign-in. */
  familiar: Map<string, number>;
}

/** Entries kept at most per map; the least recently used go first. */
const MAX_ENTRIES = 100_000;

function touch<V>(map: Map<string, V>, key: string, value: V) {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_ENTRIES) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

export class PasswordThrottle {
  private readonly pairs = new Map<string, Failures>();
  private readonly accounts = new Map<string, AccountState>();
  private readonly guards: AccountGuards;

  constructor(guards: AccountGuards) {
    this.guards = guards;
  }

  /**
   * Admits one password try for `email` from `address`, or throws 429. An admitted try counts as
   * a failure at once (so parallel tries cannot slip through one open slot) until `succeeded`.
   */
  begin(email: string, address: string, now = Date.now()) {
    const pair = this.current(this.pairs.get(pairKey(email, address)), now);
    const account = this.account(email);
    const stranger = !this.isFamiliar(account, address, now);
    const strangers = this.current(account.strangers, now);
    const waits = [this.waitMs(pair, this.guards.passwordFailuresPerAddress, now)];
    if (stranger)
      waits.push(this.waitMs(strangers, this.guards.passwordFailuresFromStrangers, now));
    const wait = Math.max(...waits);
    if (wait > 0) throw authErrors.overRequestRateLimit(Math.ceil(wait / 1000));
    touch(this.pairs, pairKey(email, address), { count: pair.count + 1, lastAt: now });
    if (stranger) account.strangers = { count: strangers.count + 1, lastAt: now };
    touch(this.accounts, email, account);
  }

  /** The try admitted by `begin` had the right password: the address becomes familiar. */
  succeeded(email: string, address: string, now = Date.now()) {
    this.pairs.delete(pairKey(email, address));
    const account = this.account(email);
    if (!this.isFamiliar(account, address, now) && account.strangers.count > 0) {
      account.strangers = { ...account.strangers, count: account.strangers.count - 1 };
    }
    account.familiar.set(address, now);
    touch(this.accounts, email, account);
  }

  private account(email: string): AccountState {
    return this.accounts.get(email) ?? { strangers: { count: 0, lastAt: 0 }, familiar: new Map() };
  }

  private isFamiliar(account: AccountState, address: string, now: number): boolean {
    const since = account.familiar.get(address);
    return since !== undefined && now - since <= this.guards.familiarAddressSeconds * 1000;
  }

  /** Failures older than the window are forgotten. */
  private current(failures: Failures | undefined, now: number): Failures {
    if (!failures || now - failures.lastAt > this.guards.failureWindowSeconds * 1000) {
      return { count: 0, lastAt: 0 };
    }
    return failures;
  }

  /** 0 while free failures remain; then 1 s, 2 s, 4 s … after the last failure, capped. */
  private waitMs(failures: Failures, free: number, now: number): number {
    if (failures.count < free) return 0;
    const delay =
      Math.min(2 ** (failures.count - free), this.guards.passwordMaxDelaySeconds) * 1000;
    return Math.max(0, failures.lastAt + delay - now);
  }
}

function pairKey(email: string, address: string): string {
  return `${email}\n${address}`;
}
