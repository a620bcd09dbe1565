// Admission of tools/call requests before any pool is touched (docs/tool-server.md "Fair use"):
// at most so many calls in flight per token and per user, and a token bucket per user for the
// rate. A refusal names the limit and the whole seconds to wait; an admission is a ticket whose
// calls are counted in flight until each has run, or until the exchange ends without running it.

export interface AdmissionLimits {
  perTokenConcurrency: number;
  perUserConcurrency: number;
  /** Calls per second a user's bucket refills with. */
  perUserRate: number;
  /** The bucket's size: calls a user may make at once after a quiet spell. */
  perUserBurst: number;
}

export type AdmissionLimit = 'token_concurrency' | 'user_concurrency' | 'user_rate';

export interface AdmissionRefusal {
  limit: AdmissionLimit;
  retryAfterSeconds: number;
  message: string;
}

interface Bucket {
  tokens: number;
  /** Clock reading (ms) the tokens were counted at. */
  at: number;
}

/** Buckets beyond this many are swept of the full ones (a full bucket is the same as none). */
const BUCKET_SWEEP_AT = 10_000;

export class ToolCallAdmission {
  private readonly limits: AdmissionLimits;
  private readonly now: () => number;
  private readonly perToken = new Map<string, number>();
  private readonly perUser = new Map<string, number>();
  private readonly buckets = new Map<string, Bucket>();

  /** `now` is a monotonic clock in milliseconds (tests pass their own). */
  constructor(limits: AdmissionLimits, now: () => number = () => performance.now()) {
    this.limits = limits;
    this.now = now;
  }

  /** Admits `calls` calls of one request as a whole, or refuses them all. */
  admit(tokenId: string, userId: string, calls: number): AdmissionTicket | AdmissionRefusal {
    const { perTokenConcurrency, perUserConcurrency, perUserRate } = this.limits;
    // Concurrency first: a refused call must not spend the rate it never used.
    if ((this.perToken.get(tokenId) ?? 0) + calls > perTokenConcurrency) {
      return {
        limit: 'token_concurrency',
        retryAfterSeconds: 1,
        message: `This token already has ${perTokenConcurrency} tool calls in flight.`,
      };
    }
    if ((this.perUser.get(userId) ?? 0) + calls > perUserConcurrency) {
      return {
        limit: 'user_concurrency',
        retryAfterSeconds: 1,
        message: `This account already has ${perUserConcurrency} tool calls in flight.`,
      };
    }
    const bucket = this.refilled(userId);
    if (bucket.tokens < calls) {
      return {
        limit: 'user_rate',
        retryAfterSeconds: Math.max(1, Math.ceil((calls - bucket.tokens) / perUserRate)),
        message: `This account may make ${perUserRate} tool calls a second.`,
      };
    }
    bucket.tokens -= calls;
    this.add(this.perToken, tokenId, calls);
    this.add(this.perUser, userId, calls);
    return new AdmissionTicket(calls, {
      release: (count) => {
        this.add(this.perToken, tokenId, -count);
        this.add(this.perUser, userId, -count);
      },
      refund: (count) => {
        const refunded = this.refilled(userId);
        refunded.tokens = Math.min(this.limits.perUserBurst, refunded.tokens + count);
      },
    });
  }

  private refilled(userId: string): Bucket {
    const now = this.now();
    let bucket = this.buckets.get(userId);
    if (!bucket) {
      if (this.buckets.size >= BUCKET_SWEEP_AT) this.sweepFullBuckets(now);
      bucket = { tokens: this.limits.perUserBurst, at: now };
      this.buckets.set(userId, bucket);
    }
    const earned = ((now - bucket.at) / 1000) * this.limits.perUserRate;
    bucket.tokens = Math.min(this.limits.perUserBurst, bucket.tokens + earned);
    bucket.at = now;
    return bucket;
  }

  private sweepFullBuckets(now: number): void {
    for (const [userId, bucket] of this.buckets) {
      const tokens = bucket.tokens + ((now - bucket.at) / 1000) * this.limits.perUserRate;
      if (tokens >= this.limits.perUserBurst) this.buckets.delete(userId);
    }
  }

  private add(counts: Map<string, number>, key: string, delta: number): void {
    const next = (counts.get(key) ?? 0) + delta;
    if (next > 0) counts.set(key, next);
    else counts.delete(key);
  }
}

/** Where a ticket gives its calls back: the in-flight counts, and the rate bucket. */
interface TicketAccount {
  release(count: number): void;
  refund(count: number): void;
}

/**
 * The calls of one admitted request. Each call that runs begins and ends; when the exchange is
 * over (answered, refused, or the client gone) the calls that never began are released at once.
 */
export class AdmissionTicket {
  private readonly calls: number;
  private readonly account: TicketAccount;
  private begun = 0;
  private closed = false;

  constructor(calls: number, account: TicketAccount) {
    this.calls = calls;
    this.account = account;
  }

  /** A call starts running; false when it was not admitted (the exchange is already over). */
  begin(): boolean {
    if (this.closed || this.begun >= this.calls) return false;
    this.begun += 1;
    return true;
  }

  /** A call that began has finished. */
  end(): void {
    this.account.release(1);
  }

  /** The exchange is over: calls that never began stop counting. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.account.release(this.calls - this.begun);
  }

  /**
   * The request was refused before any call ran (its token turned out revoked, the store was
   * away): its calls stop counting and their rate is given back, so a revoked token cannot spend
   * its account's budget.
   */
  cancel(): void {
    if (this.closed) return;
    this.account.refund(this.calls - this.begun);
    this.close();
  }
}
