// Runs the storage service on a loopback port, connected to Postgres as supabase_storage_admin
// (the owner of schema storage, as on hosted Supabase), with files under the stack's data dir.
import pg from 'pg';
import type { Logger } from 'pino';
import { serveOnLoopback } from '../loopback-server.ts';
import { createStorageApp } from './app.ts';
import { ObjectFiles } from './object-files.ts';
import type { StorageConfig } from './storage-config.ts';

export interface StorageServiceOptions {
  port: number;
  dbPort: number;
  config: StorageConfig;
  logger: Logger;
}

export interface RunningStorageService {
  url: string;
  stop(): Promise<void>;
}

/** bigint (int8) as a number: file_size_limit and sizes stay far below 2^53. */
const INT8_OID = 20;

export async function startStorageService(
  options: StorageServiceOptions,
): Promise<RunningStorageService> {
  const logger = options.logger.child({ component: 'storage' });
  const files = new ObjectFiles(options.config.rootDir);
  await files.prepare();
  const pool = new pg.Pool({
    connectionString: `postgresql://supabase_storage_admin:postgres@127.0.0.1:${options.dbPort}/postgres`,
    max: 10,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID && format !== 'binary'
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'idle database connection failed'));
  const app = createStorageApp({ pool, files, config: options.config, logger }, logger);
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
