// Runs the auth service on a loopback port, connected to Postgres as supabase_auth_admin (the
// role that owns schema auth, as on hosted Supabase).
import pg from 'pg';
import type { Logger } from 'pino';
import { serveOnLoopback } from '../loopback-server.ts';
import { createAuthApp } from './app.ts';
import type { AuthConfig } from './auth-config.ts';
import { Mailbox } from './mailbox.ts';

export interface AuthServiceOptions {
  port: number;
  dbPort: number;
  config: AuthConfig;
  mailboxDir: string;
  logger: Logger;
}

export interface RunningAuthService {
  url: string;
  stop(): Promise<void>;
}

export async function startAuthService(options: AuthServiceOptions): Promise<RunningAuthService> {
  const logger = options.logger.child({ component: 'auth' });
  const pool = new pg.Pool({
    connectionString: `postgresql://supabase_auth_admin:postgres@127.0.0.1:${options.dbPort}/postgres`,
    max: 10,
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'idle database connection failed'));
  const app = createAuthApp(
    { pool, config: options.config, mailbox: new Mailbox(options.mailboxDir) },
    logger,
  );
  const server = await serveOnLoopback(app.fetch, options.port).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  return {
    url: `http://127.0.0.1:${options.port}`,
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.end();
    },
  };
}
