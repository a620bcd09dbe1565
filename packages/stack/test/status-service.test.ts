// The status service inside a started stack (docs/feeds.md "Status"): it writes a snapshot that
// satisfies the shared schema, overall turns degraded while a component is stopped and ok when
// it returns, and it keeps writing across a Postgres restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  localStackComponents,
  type RunningStatusService,
  StatusSnapshot,
  startStatusService,
} from '@capture/status';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RunningStack, startStack } from '../src/index.ts';
import { findFreePort } from '../src/ports.ts';
import { startCluster } from '../src/postgres/cluster.ts';
import { applyMigrations, applyPlatformBootstrap } from '../src/postgres/schema-setup.ts';
import { until } from './helpers/until.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' });

async function readRow(dbUrl: string) {
  const client = new pg.Client({ connectionString: dbUrl });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ snapshot: unknown; updated_at: Date }>(
      'select snapshot, updated_at from public.service_status where id = 1',
    );
    return rows[0];
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('the status service in the local stack', () => {
  let stack: RunningStack;
  let dataDir: string;
  let proxyStandIn: Server;
  let proxyPort = 0;
  let service: RunningStatusService;

  const listen = () =>
    new Promise<void>((resolve) => {
      proxyStandIn = createServer((_request, response) => response.end('ok'));
      proxyStandIn.listen(proxyPort, '127.0.0.1', () => {
        proxyPort = (proxyStandIn.address() as AddressInfo).port;
        resolve();
      });
    });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'status-test-'));
    // The stack's own status service writes once at start and then stays quiet for this file.
    stack = await startStack({
      dataDir,
      ports: 'free',
      ephemeral: true,
      seed: false,
      statusIntervalMs: 3_600_000,
      // The test stops and restarts a stand-in for the proxy instead; without the tool server
      // the stack's own status row never has the 6 components this file's service writes.
      proxy: false,
      toolServer: false,
      logger,
    });
    await listen();
    service = await startStatusService({
      dbUrl: stack.dbUrl,
      components: [
        ...localStackComponents({
          dbUrl: stack.dbUrl,
          apiUrl: stack.apiUrl,
          anonKey: stack.keys.anonKey,
        }),
        // A stand-in the test can stop: a real HTTP listener on loopback.
        {
          key: 'proxy',
          label: 'Capture proxy',
          probe: { kind: 'http', url: `http://127.0.0.1:${proxyPort}/` },
        },
      ],
      intervalMs: 200,
      logger,
    });
  });
  afterAll(async () => {
    await service?.stop();
    await new Promise((resolve) => proxyStandIn?.close(resolve));
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('writes a snapshot with every field of 002 §2.2 and every component of the stack', async () => {
    const row = await until(async () => {
      const current = await readRow(stack.dbUrl);
      const parsed = current && StatusSnapshot.safeParse(current.snapshot);
      // A probe can time out once on a loaded machine; the next snapshot is the one to judge.
      return parsed?.success && parsed.data.components.length === 6 && parsed.data.overall === 'ok'
        ? parsed.data
        : undefined;
    });
    expect(row.components.map((component) => component.key)).toEqual([
      'postgres',
      'rest',
      'auth',
      'realtime',
      'functions',
      'proxy',
    ]);
    expect(row.overall).toBe('ok');
    expect(row.components.find((component) => component.key === 'realtime')?.probe.httpStatus).toBe(
      101,
    );
  });

  it('turns degraded while a component is stopped and ok when it returns', async () => {
    await new Promise((resolve) => proxyStandIn.close(resolve));
    proxyStandIn.closeAllConnections();
    // Degraded because of the proxy: another component's one slow probe does not count here.
    const degraded = await until(() => {
      const latest = service.latest();
      const proxy = latest?.components.find((component) => component.key === 'proxy');
      return latest?.overall === 'degraded' && proxy?.probe.up === false ? latest : undefined;
    });
    expect(degraded.components.find((component) => component.key === 'proxy')).toMatchObject({
      probe: { up: false, httpStatus: 0 },
      unitState: 'failed',
    });
    await listen();
    const recovered = await until(() => (service.latest()?.overall === 'ok' ? true : undefined));
    expect(recovered).toBe(true);
  });
});

describe('the status service across a Postgres restart', () => {
  it('keeps writing once the database is back', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'status-restart-'));
    const port = await findFreePort();
    let cluster = await startCluster({ dataDir, port, logger, ephemeral: true });
    await applyPlatformBootstrap(cluster.url);
    await applyMigrations(REPO_ROOT, cluster.url, logger);
    const service = await startStatusService({
      dbUrl: cluster.url,
      components: [
        { key: 'postgres', label: 'Postgres', probe: { kind: 'postgres', url: cluster.url } },
      ],
      intervalMs: 200,
      logger,
    });
    try {
      const before = await until(() => readRow(cluster.url));
      await cluster.stop();
      const downSnapshot = await until(() =>
        service.latest()?.overall === 'down' ? service.latest() : undefined,
      );
      expect(downSnapshot?.components[0]?.probe.up).toBe(false);
      cluster = await startCluster({ dataDir, port, logger, ephemeral: true });
      const after = await until(async () => {
        const row = await readRow(cluster.url);
        return row &&
          row.updated_at > before.updated_at &&
          (row.snapshot as { overall: string }).overall === 'ok'
          ? row
          : undefined;
      });
      expect(StatusSnapshot.parse(after.snapshot).overall).toBe('ok');
    } finally {
      await service.stop();
      await cluster.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
