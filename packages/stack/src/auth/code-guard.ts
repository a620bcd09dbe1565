// Guessing typed e-mail codes: a 6-digit code valid for an hour falls in minutes to an unlimited
// guesser. Besides the per-address `token_verifications` bucket, typed codes for one account
// (the address they are typed for, from any client address) share a bucket of the same size,
// and after `wrongCodesBeforeBurn` wrong codes the account's outstanding code is burned: even
// the right one is refused (otp_expired) and a new one must be requested.
// Keyed by the address as typed, known or not, so the answers never tell whether one exists.
// Token hashes (links) cannot be guessed: they are keyed with a server secret (crypto.ts).
import type { AccountGuards } from './auth-config.ts';
import { authErrors } from './auth-error.ts';
import { TokenBucketLimiter } from './token-bucket.ts';

const MAX_ENTRIES = 100_000;

export class CodeGuard {
  private readonly perAccount: TokenBucketLimiter;
  private readonly wrong = new Map<string, number>();
  private readonly guards: AccountGuards;

  constructor(guards: AccountGuards) {
    this.guards = guards;
    this.perAccount = new TokenBucketLimiter(guards.verificationsPerAccount / 300, 30, 3600_000);
  }

  /** Takes one typed try from the account's bucket; throws 429 when it is empty. */
  admit(email: string) {
    const result = this.perAccount.take(email);
    if (!result.allowed) throw authErrors.overRequestRateLimit(result.retryAfterSeconds);
  }

  /**
   * Counts a typed code before it is checked, so guesses sent in parallel cannot all pass the
   * count while the database answers the first (each would otherwise see the same old count).
   * False once the account's tries are used up: its code is burned, and the try is refused
   * unchecked until a new code is issued (`reset`).
   */
  startTry(email: string): boolean {
    const count = (this.wrong.get(email) ?? 0) + 1;
    if (count > this.guards.wrongCodesBeforeBurn) return false;
    this.wrong.delete(email);
    this.wrong.set(email, count);
    while (this.wrong.size > MAX_ENTRIES) {
      const oldest = this.wrong.keys().next().value;
      if (oldest === undefined) break;
      this.wrong.delete(oldest);
    }
    return true;
  }

  /** A counted try was wrong: true when it was the last one, so the code must now be burned. */
  wasLastTry(email: string): boolean {
    return (this.wrong.get(email) ?? 0) >= this.guards.wrongCodesBeforeBurn;
  }

  /** A counted try could not be checked (a fault, not a wrong code): it is given back. */
  giveBack(email: string) {
    const count = this.wrong.get(email);
    if (count !== undefined) this.wrong.set(email, Math.max(0, count - 1));
  }

  /** A new code was issued, or the code was used: its count starts again. */
  reset(email: string) {
    this.wrong.delete(email);
  }
}
