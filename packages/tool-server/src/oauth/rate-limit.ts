// Fixed-window rate limits kept in Postgres (so every instance counts together). Over the limit:
// 429 with Retry-After until the window ends.
import type { Database } from '../store/database.ts';
import { OAuthError } from './oauth-error.ts';

export async function enforceRateLimit(
  db: Database,
  bucket: string,
  limit: number,
  windowSeconds: number,
): Promise<void> {
  const rows = await db.query<{ hits: number; retry_after: number }>(
    `insert into private.oauth_rate_counters as c (bucket, window_start, hits)
     values ($1, to_timestamp(floor(extract(epoch from now()) / $2) * $2), 1)
     on conflict on constraint oauth_rate_counters_pkey do update set hits = c.hits + 1
     returning hits,
       ceil(extract(epoch from (c.window_start + make_interval(secs => $2) - now())))::int
         as retry_after`,
    [bucket, windowSeconds],
  );
  const row = rows[0];
  if (row && row.hits > limit) {
    // The MCP SDK's own authorization router answers 429 too_many_requests; clients know it.
    throw new OAuthError(
      'too_many_requests',
      'Too many requests from this address; try again later.',
      {
        headers: { 'retry-after': String(Math.max(1, row.retry_after)) },
      },
    );
  }
}
