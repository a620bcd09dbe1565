// 001 §7 and §8: when the store is unreachable, /authorize, /token and /register answer 503
// temporarily_unavailable with Retry-After: 10 within a few seconds (never invalid_client, which
// would make clients throw their registration away), and work again once it is back. Also the
// per-address registration limit. The tool server runs alone here on a Postgres of its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../stack/src/ports.ts';
import { type RunningCluster, startCluster } from '../../stack/src/postgres/cluster.ts';
import { applyMigrations, applyPlatformBootstrap } from '../../stack/src/postgres/schema-setup.ts';
import { REPO_ROOT } from '../../stack/src/stack.ts';
import { type RunningToolServer, startToolServer } from '../src/index.ts';
import { createDatabase } from '../src/store/database.ts';
import { pkcePair } from './helpers/oauth-stack.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const SECRET = 'super-secret-jwt-token-with-at-least-32-characters-long';

let dataDir = '';
let dbPort = 0;
let cluster: RunningCluster | undefined;
let server: RunningToolServer | undefined;
let base = '';

async function startServer(dbUrl: string, registrationsPerHour = 3): Promise<RunningToolServer> {
  const port = await findFreePort();
  base = `http://127.0.0.1:${port}`;
  return startToolServer(
    {
      origins: [base],
      listen: [{ host: '127.0.0.1', port }],
      dashboardUrl: 'http://127.0.0.1:1',
      dbUrl,
      supabaseUrl: 'http://127.0.0.1:2',
      jwtSecret: SECRET,
      registrationsPerHour,
    },
    logger,
  );
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tool-server-store-'));
  dbPort = await findFreePort();
  cluster = await startCluster({ dataDir, port: dbPort, logger, ephemeral: true });
  await applyPlatformBootstrap(cluster.url);
  await applyMigrations(REPO_ROOT, cluster.url, logger);
  server = await startServer(cluster.url);
});

afterAll(async () => {
  await server?.stop();
  await cluster?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A web client's registration: every one counts against the limit (loopback ones may not). */
function registration() {
  return fetch(`${base}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: ['https://app.example.com/cb'],
      token_endpoint_auth_method: 'none',
    }),
  });
}

/** The three OAuth endpoints 001 §7 names, each as a client would call it. */
const calls = {
  register: registration,
  token: () =>
    fetch(`${base}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'x',
        code_verifier: pkcePair().verifier,
        redirect_uri: 'http://127.0.0.1/cb',
        client_id: '00000000-0000-4000-8000-000000000000',
      }),
    }),
  authorize: () =>
    fetch(
      `${base}/authorize?response_type=code&client_id=00000000-0000-4000-8000-000000000000&code_challenge=${pkcePair().challenge}&code_challenge_method=S256`,
      { redirect: 'manual' },
    ),
};

async function expectUnavailable(call: () => Promise<Response>) {
  const started = performance.now();
  const response = await call();
  const elapsed = performance.now() - started;
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('10');
  const body = (await response.json()) as { error: string; error_description: string };
  expect(body.error).toBe('temporarily_unavailable');
  expect(body.error_description).toMatch(/retry/i);
  expect(elapsed).toBeLessThan(5_000);
}

describe('registration limit', () => {
  it('answers 429 with Retry-After past the per-address limit', async () => {
    for (let attempt = 0; attempt < 3; attempt += 1)
      expect((await registration()).status).toBe(201);
    const refused = await registration();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: string }).error).toBe('too_many_requests');
  });
});

describe("a tool call's transaction as the caller", () => {
  it('carries claims with quotes and backslashes intact, as the authenticated role', async () => {
    const db = createDatabase(cluster?.url as string, logger, { timeoutMs: 5_000 });
    const claims = {
      sub: '00000000-0000-4000-8000-000000000001',
      role: 'authenticated',
      // Each would end or escape a badly quoted literal.
      note: `it's "quoted" \\ and '); select pg_sleep(5); --`,
      path: 'C:\\tmp\\x',
    };
    try {
      const [row] = await db.asCaller(claims, async (client) => {
        const { rows } = await client.query<{ claims: unknown; role: string; timeout: string }>(
          `select current_setting('request.jwt.claims')::jsonb as claims, current_user as role,
                  current_setting('statement_timeout') as timeout`,
        );
        return rows;
      });
      expect(row).toEqual({ claims, role: 'authenticated', timeout: '8s' });
      // The settings were local to that transaction.
      const [after] = await db.query<{ role: string }>('select current_user as role');
      expect(after?.role).not.toBe('authenticated');
    } finally {
      await db.close();
    }
  });

  it('read-only: Postgres refuses a write, and the connection serves the next call', async () => {
    // One connection: the second call can only run once the first one's commit has returned it.
    const db = createDatabase(cluster?.url as string, logger, { timeoutMs: 5_000, max: 1 });
    const claims = { sub: '00000000-0000-4000-8000-000000000001', role: 'authenticated' };
    try {
      await expect(
        db.asCaller(claims, (client) => client.query('create temporary table t (x int)'), {
          readOnly: true,
        }),
      ).rejects.toMatchObject({ code: '25006' }); // read_only_sql_transaction
      for (let call = 0; call < 3; call += 1) {
        const [row] = await db.asCaller(
          claims,
          async (client) =>
            (
              await client.query<{ read_only: string; role: string }>(
                `select current_setting('transaction_read_only') as read_only,
                        current_user as role`,
              )
            ).rows,
          { readOnly: true },
        );
        expect(row).toEqual({ read_only: 'on', role: 'authenticated' });
      }
      // Each commit ran: nothing is left open on the connection.
      const [state] = await db.query<{ read_only: string; in_transaction: boolean }>(
        `select current_setting('transaction_read_only') as read_only,
                now() <> statement_timestamp() as in_transaction`,
      );
      expect(state).toEqual({ read_only: 'off', in_transaction: false });
    } finally {
      await db.close();
    }
  });
});

describe('Postgres stopped', () => {
  it.each(Object.entries(calls))(
    '%s answers 503 temporarily_unavailable with Retry-After: 10 in under 5 s',
    async (_, call) => {
      await cluster?.stop();
      try {
        await expectUnavailable(call);
      } finally {
        cluster = await startCluster({ dataDir, port: dbPort, logger, ephemeral: true });
      }
      // Back again: an unknown client is invalid_client once more, never before.
      const after = await calls.token();
      expect(after.status).toBe(400);
      expect(((await after.json()) as { error: string }).error).toBe('invalid_client');
    },
    30_000,
  );
});

describe('a genuine fault', () => {
  it('answers 500 server_error, not a client error and not 503', async () => {
    const db = new pg.Client({ connectionString: cluster?.url });
    await db.connect();
    try {
      // A schema the server does not expect: no retry can help, so it is not an outage.
      await db.query('alter table private.oauth_clients rename to oauth_clients_moved');
      const response = await calls.token();
      expect(response.status).toBe(500);
      const body = (await response.json()) as { error: string; error_description: string };
      expect(body.error).toBe('server_error');
      expect(body.error_description).not.toMatch(/oauth_clients/);
    } finally {
      await db.query('alter table private.oauth_clients_moved rename to oauth_clients');
      await db.end();
    }
  });
});

describe('Postgres hanging', () => {
  let blackhole: Server | undefined;
  const sockets = new Set<Socket>();

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) =>
      blackhole ? blackhole.close(() => resolve()) : resolve(),
    );
  });

  it('answers 503 within the deadline when connections are accepted and never answered', async () => {
    blackhole = createServer((socket) => {
      sockets.add(socket);
    });
    await new Promise<void>((resolve) => blackhole?.listen(0, '127.0.0.1', () => resolve()));
    const address = blackhole.address() as { port: number };
    const hanging = await startServer(
      `postgresql://postgres:postgres@127.0.0.1:${address.port}/postgres`,
    );
    try {
      for (const call of Object.values(calls)) await expectUnavailable(call);
    } finally {
      await hanging.stop();
    }
  }, 60_000);
});
