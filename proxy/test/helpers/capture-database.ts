// A throwaway Postgres with the platform bootstrap and this repo's migrations, for proxy tests:
// the captures land in a real `entries` table, devices in `devices`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { findFreePort } from '../../../packages/stack/src/ports.ts';
import { type RunningCluster, startCluster } from '../../../packages/stack/src/postgres/cluster.ts';
import {
  applyMigrations,
  applyPlatformBootstrap,
} from '../../../packages/stack/src/postgres/schema-setup.ts';
import { REPO_ROOT } from '../../../packages/stack/src/stack.ts';
import { until } from '../../../packages/stack/test/helpers/until.ts';
import { CaptureWriter } from '../../src/index.ts';

export interface CaptureDatabase {
  cluster: RunningCluster;
  url: string;
  dataDir: string;
  query<T extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<T[]>;
  /** A capture writer into this database, flushing every 50 ms, spooling under its data dir. */
  writer(): CaptureWriter;
  /** Stops Postgres (an outage); the returned function starts it again on the same data. */
  interrupt(): Promise<() => Promise<void>>;
  /** The first entry whose `column` equals `value`, waiting for the writer to land it. */
  entryWhere(column: 'path' | 'host' | 'url', value: string): Promise<CapturedEntry>;
  stop(): Promise<void>;
}

export interface CapturedEntry {
  kind: string;
  host: string;
  url: string;
  path: string;
  device_uuid: string | null;
  payload: Record<string, unknown> & {
    attribution?: { rule: string; device_uuid: string | null };
    tls?: Record<string, unknown>;
  };
}

export async function startCaptureDatabase(logger: Logger): Promise<CaptureDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'proxy-test-'));
  const port = await findFreePort();
  let cluster = await startCluster({ dataDir, port, logger, ephemeral: true });
  await applyPlatformBootstrap(cluster.url);
  await applyMigrations(REPO_ROOT, cluster.url, logger);
  const query = async <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    try {
      return (await client.query<T>(sql, values)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    get cluster() {
      return cluster;
    },
    url: cluster.url,
    dataDir,
    query,
    writer: () =>
      new CaptureWriter({
        dbUrl: cluster.url,
        spoolDir: join(dataDir, 'spool'),
        logger,
        flushIntervalMs: 50,
      }),
    async interrupt() {
      await cluster.stop();
      return async () => {
        cluster = await startCluster({ dataDir, port, logger, ephemeral: true });
      };
    },
    entryWhere: (column, value) =>
      until(async () => {
        const rows = await query<CapturedEntry>(
          `select kind, host, url, path, device_uuid, payload from public.entries where ${column} = $1`,
          [value],
        );
        return rows[0];
      }),
    async stop() {
      await cluster.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
