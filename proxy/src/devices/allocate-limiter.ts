// Failed POST /allocate calls are limited per client address (docs/proxy.md "Devices, ports and
// PAC"), the way the federation broker limits its endpoints: fixed one-minute windows counted in
// Postgres, so every daemon sharing the database shares the count. A call takes its place in the
// count before it is answered (private.begin_proxy_allocate_attempt, one atomic upsert), so calls
// sent together cannot all pass while the count stands still; one that succeeds gives its place
// back. Past the limit an address is answered 429 before its credentials are looked at, which stops
// guessing bundle secrets and probing device ownership.
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

  /**
   * Counts a call before it is answered: its place (give it back with `forgive` unless the call
   * fails), or the seconds to wait instead (429) when none is left.
   */
  async begin(clientIp: string | null): Promise<AllocatePlace> {
    if (!clientIp) return { retryAfter: 0 };
    const { rows } = await this.pool.query<{ retry_after: number; window_start: Date | null }>(
      'select retry_after, window_start from private.begin_proxy_allocate_attempt($1, $2)',
      [plainAddress(clientIp), this.perMinute],
    );
    const row = rows[0];
    return { retryAfter: row?.retry_after ?? 0, window: row?.window_start ?? undefined };
  }

  /** The call was not a failure (it succeeded, or its client left): its place is given back. */
  async forgive(clientIp: string | null, place: AllocatePlace): Promise<void> {
    if (!clientIp || !place.window) return;
    await this.pool.query('select private.forgive_proxy_allocate_attempt($1, $2)', [
      plainAddress(clientIp),
      place.window,
    ]);
  }
}

/** A call's place in its address's count: the window it was taken in, or how long to wait. */
export interface AllocatePlace {
  retryAfter: number;
  window?: Date;
}

/** An IPv4-mapped address counts as the IPv4 address it is. */
const plainAddress = (address: string) => address.replace(/^::ffff:/, '');
