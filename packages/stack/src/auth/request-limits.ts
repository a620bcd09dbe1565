// `[auth.rate_limit]` per client address, bucket for bucket as GoTrue builds them
// (internal/api/apilimiter/apilimiter.go) and applies them (internal/api/api.go, token.go):
// - sign_in_sign_ups (GOTRUE_RATE_LIMIT_OTP): POST /signup (not anonymous), /otp, /recover,
//   /resend and PUT /user; per 5 minutes, burst 30;
// - token_refresh: POST /token, every grant (password, refresh_token, pkce); per 5 minutes, burst 30;
// - token_verifications: GET and POST /verify; per 5 minutes, burst 30;
// - anonymous_users: anonymous POST /signup; per hour, burst the hourly figure.
// Each route has its own bucket, as each GoTrue route has its own limiter. Answer: 429
// over_request_rate_limit.
import type { Context } from 'hono';
import type { AuthRateLimits } from './auth-config.ts';
import { authErrors } from './auth-error.ts';
import { TokenBucketLimiter } from './token-bucket.ts';

export type LimitedRoute =
  | 'signup'
  | 'anonymous'
  | 'otp'
  | 'recover'
  | 'resend'
  | 'user'
  | 'token'
  | 'verify';

const HOUR_MS = 3600 * 1000;
const FIVE_MINUTES = 300;
const BURST = 30;

function buckets(limits: AuthRateLimits): Record<LimitedRoute, TokenBucketLimiter> {
  const per5Min = (value: number) => new TokenBucketLimiter(value / FIVE_MINUTES, BURST, HOUR_MS);
  return {
    signup: per5Min(limits.sign_in_sign_ups),
    otp: per5Min(limits.sign_in_sign_ups),
    recover: per5Min(limits.sign_in_sign_ups),
    resend: per5Min(limits.sign_in_sign_ups),
    user: per5Min(limits.sign_in_sign_ups),
    token: per5Min(limits.token_refresh),
    verify: per5Min(limits.token_verifications),
    anonymous: new TokenBucketLimiter(
      limits.anonymous_users / 3600,
      limits.anonymous_users,
      HOUR_MS,
    ),
  };
}

export class RequestLimits {
  private readonly limiters: Record<LimitedRoute, TokenBucketLimiter> | undefined;

  constructor(limits: AuthRateLimits | undefined) {
    this.limiters = limits && buckets(limits);
  }

  /** Takes one request from the address's bucket for the route; throws 429 when it is empty. */
  check(route: LimitedRoute, address: string) {
    const limiter = this.limiters?.[route];
    if (!limiter) return;
    const result = limiter.take(address);
    if (!result.allowed) throw authErrors.overRequestRateLimit(result.retryAfterSeconds);
  }
}

/** Node's socket address of the request, when it came over a socket (not in-process). */
function socketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/**
 * The client address the limits key on: the first X-Forwarded-For value, which the gateway
 * sets from its socket (replacing whatever the client sent), as GoTrue reads
 * GOTRUE_RATE_LIMIT_HEADER; else this service's own socket peer. The service listens on
 * loopback only, so only local processes can reach it without the gateway.
 */
export function clientAddress(c: Context): string {
  const forwarded = c.req.header('X-Forwarded-For')?.split(',')[0]?.trim();
  const address = forwarded || socketAddress(c) || 'unknown';
  // One IPv4 client, one key, whichever socket family carried it.
  return address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
}
