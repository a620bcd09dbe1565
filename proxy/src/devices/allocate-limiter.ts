// Failed POST /allocate calls are limited per client address (issue 21), the way the federation
// broker limits its endpoints: fixed one-minute windows counted in Postgres with one atomic upsert
// (private.record_proxy_allocate_failure), so every daemon sharing the database shares the count.
// Past the limit an address is answered 429 before its credentials are looked at, which stops
// guessing bundle secrets and probing device ownership; successful calls are never counted.
import type pg from 'pg';

/** Failed calls one address may make per minute (PROXY_ALLOCATE_FAILURES_PER_MINUTE). */
export const DEFAULT_ALLOCATE_FAILURES_PER_MINUTE = 30;

export class AllocateLimiter {
  private readonly pool: pg.Pool;
  private readonly perMinute: number;

  constructor(pool: pg.Pool, perMinute = DEFAULT_ALLOCATE_FAILURES_PER_MINUTE) {
    this.pool = pool;
    this.perMinute = perMinute;
  }

  /** Seconds the address must wait before its next call is looked at; 0 when it may call. */
  async retryAfter(clientIp: string | null): Promise<number> {
    if (!clientIp) return 0;
    const { rows } = await this.pool.query<{ seconds: number }>(
      'select private.proxy_allocate_blocked($1, $2) as seconds',
      [clientIp.replace(/^::ffff:/, ''), this.perMinute],
    );
    return rows[0]?.seconds ?? 0;
  }

  async recordFailure(clientIp: string | null): Promise<void> {
    if (!clientIp) return;
    await this.pool.query('select private.record_proxy_allocate_failure($1)', [
      clientIp.replace(/^::ffff:/, ''),
    ]);
  }
}
