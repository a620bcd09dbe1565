// Token buckets keyed by a string (a client address, an account), with the semantics of the
// tollbooth limiter GoTrue uses (internal/api/apilimiter): a bucket starts full with `burst`
// tokens, refills at `ratePerSecond`, and is forgotten after `ttlMs` without use.

export interface TakeResult {
  allowed: boolean;
  /** Whole seconds until one token is back (0 when allowed). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Buckets kept at most; the least recently used are dropped first when a flood of keys comes. */
const MAX_BUCKETS = 100_000;

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly ratePerSecond: number;
  private readonly burst: number;
  private readonly ttlMs: number;

  constructor(ratePerSecond: number, burst: number, ttlMs: number) {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.ttlMs = ttlMs;
  }

  take(key: string, now = Date.now()): TakeResult {
    const bucket = this.refilled(key, now);
    // Re-inserting keeps the Map in least-recently-used order for eviction.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    this.evictOverflow();
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    const wait = this.ratePerSecond > 0 ? (1 - bucket.tokens) / this.ratePerSecond : this.ttlMs;
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(wait)) };
  }

  private refilled(key: string, now: number): Bucket {
    const existing = this.buckets.get(key);
    if (!existing || now - existing.updatedAt > this.ttlMs) {
      return { tokens: this.burst, updatedAt: now };
    }
    const elapsed = Math.max(0, now - existing.updatedAt) / 1000;
    existing.tokens = Math.min(this.burst, existing.tokens + elapsed * this.ratePerSecond);
    existing.updatedAt = now;
    return existing;
  }

  private evictOverflow() {
    while (this.buckets.size > MAX_BUCKETS) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) return;
      this.buckets.delete(oldest);
    }
  }
}
