// Mail asked for an address that has no account (account enumeration; docs/local-stack.md
// "Limits and answers that give nothing away"): a known address asked for a second mail within
// `max_frequency` is refused with 429 over_email_send_rate_limit, so an unknown one must be too,
// or the second answer tells them apart. Nothing is sent either way; what is remembered is only
// when each unknown address last asked, in memory, bounded.
import { authErrors } from './auth-error.ts';

const MAX_ENTRIES = 100_000;

export class UnknownAddressSends {
  private readonly maxFrequencySeconds: number;
  private readonly askedAt = new Map<string, number>();

  constructor(maxFrequencySeconds: number) {
    this.maxFrequencySeconds = maxFrequencySeconds;
  }

  /** As for a known address's mail (email-tokens.ts): 429 within the window, else noted. */
  ask(address: string, now = Date.now()): void {
    const key = address.trim().toLowerCase();
    const last = this.askedAt.get(key);
    if (last !== undefined) {
      const wait = Math.ceil(this.maxFrequencySeconds - (now - last) / 1000);
      if (wait > 0) throw authErrors.overEmailSendRateLimit(wait);
    }
    this.askedAt.delete(key);
    this.askedAt.set(key, now);
    while (this.askedAt.size > MAX_ENTRIES) {
      const oldest = this.askedAt.keys().next().value;
      if (oldest === undefined) break;
      this.askedAt.delete(oldest);
    }
  }
}
