// Retention beside a long-running read (docs/scale.md, "Retention"): the job gives way instead of
// queueing an ACCESS EXCLUSIVE lock on entries behind the read, which would hold up every capture
// batch and page read that comes after it; the partition goes on a later run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, type RunningStack, startStack } from '@capture/stack';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let stack: RunningStack;
let dataDir: string;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: stack.dbUrl });
  await client.connect();
  clients.push(client);
  return client;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'retention-test-'));
  stack = await startStack({
    projectDir: REPO_ROOT,
    dataDir,
    ports: 'free',
    ephemeral: true,
    proxy: false,
    toolServer: false,
    logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
  });
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.end()));
  await stack?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the retention job beside a long read', () => {
  it('gives way to the read, lets captures in meanwhile, and drops the week on a later run', async () => {
    const setup = await connect();
    // A week 40 weeks back with one capture in it, and retention of 30 weeks.
    const { rows } = await setup.query<{ partition: string }>(
      `select private.create_entries_partitions(now() - interval '40 weeks', now() - interval '40 weeks'),
              'private.entries_w' || to_char(date_trunc('week', (now() - interval '40 weeks') at time zone 'UTC'), 'YYYYMMDD') as partition`,
    );
    const partition = rows[0]?.partition as string;
    await setup.query(
      `insert into public.entries (ts, request_id, payload)
       values (now() - interval '40 weeks', 'retention-old', '{"host":"old.example"}')`,
    );
    await setup.query(
      `update public.settings_global set data = data || '{"entries_retention_weeks": 30}' where id = 1`,
    );
    const exists = async () =>
      (await setup.query('select to_regclass($1) as rel', [partition])).rows[0]?.rel !== null;
    expect(await exists()).toBe(true);

    // A report's transaction reading every partition, still open.
    const report = await connect();
    await report.query('begin');
    await report.query('select count(*) from public.entries');

    const job = await connect();
    const writer = await connect();
    const warnings: string[] = [];
    job.on('notice', (notice) => warnings.push(notice.message ?? ''));
    const run = job.query<{ dropped: number }>(
      'select private.drop_expired_entries_partitions(1) as dropped',
    );
    // A capture batch arriving meanwhile: were the job to wait on, the batch would queue behind
    // its lock request for as long as the report runs. It lands while the report is still open.
    const captured = writer.query(
      `insert into public.entries (request_id, payload) values ('retention-new', '{"host":"new.example"}')`,
    );
    expect((await run).rows[0]?.dropped).toBe(0);
    expect((await captured).rowCount).toBe(1);
    expect(warnings).toEqual([expect.stringContaining('is in use; left for the next run')]);
    expect(await exists()).toBe(true);

    await report.query('rollback');
    const later = await job.query<{ dropped: number }>(
      'select private.drop_expired_entries_partitions(1) as dropped',
    );
    expect(later.rows[0]?.dropped).toBe(1);
    expect(await exists()).toBe(false);
    const remaining = await setup.query(
      `select request_id from public.entries where request_id like 'retention-%' order by 1`,
    );
    expect(remaining.rows.map((row) => row.request_id)).toEqual(['retention-new']);
  });
});
