// What every auth route needs: the database pool, the settings and the mailbox.
import type pg from 'pg';
import type { AuthConfig } from './auth-config.ts';
import type { Mailbox } from './mailbox.ts';

export interface AuthContext {
  pool: pg.Pool;
  config: AuthConfig;
  mailbox: Mailbox;
}
