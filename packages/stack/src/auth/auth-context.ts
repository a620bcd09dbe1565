// What every auth route needs: the database pool, the settings, the mailbox and the defences
// against guessing (request limits per address, per-account password and code guards).
import type pg from 'pg';
import type { AuthConfig } from './auth-config.ts';
import { CodeGuard } from './code-guard.ts';
import type { Mailbox } from './mailbox.ts';
import { PasswordThrottle } from './password-throttle.ts';
import { RequestLimits } from './request-limits.ts';
import { UnknownAddressSends } from './unknown-address-sends.ts';

export interface AuthDefences {
  requests: RequestLimits;
  passwords: PasswordThrottle;
  codes: CodeGuard;
  unknownAddresses: UnknownAddressSends;
}

export interface AuthServices {
  pool: pg.Pool;
  config: AuthConfig;
  mailbox: Mailbox;
}

export interface AuthContext extends AuthServices {
  defences: AuthDefences;
}

/** Fresh defences for one service instance (their state lives in memory). */
export function createDefences(config: AuthConfig): AuthDefences {
  return {
    requests: new RequestLimits(config.rateLimits),
    passwords: new PasswordThrottle(config.guards),
    codes: new CodeGuard(config.guards),
    unknownAddresses: new UnknownAddressSends(config.emailMaxFrequencySeconds),
  };
}
