// The write side of bench:scale: captures written through the proxy's own CaptureWriter (its
// batch statement, batch size and pool) into the current week's partition, counted back; and the
// retention job dropping the oldest week while that ingest, a page read and a long-running
// report all run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { Capture } from '../proxy/src/capture/capture.ts';
import { CaptureWriter } from '../proxy/src/capture/capture-writer.ts';
import { percentile } from './percentile.ts';

/** The proxy writer's own batch size (CaptureWriter's default). */
const BATCH = 500;

let sequence = 0;

/** A capture shaped as the proxy records one (payload fields of docs/spec, "Captures"). */
function syntheticCapture(deviceUuid: string): Capture {
  sequence += 1;
  const host = sequence % 3 === 0 ? 'api.shop.example' : `cdn${sequence % 40}.example.net`;
  const path = `/v1/orders/${sequence}/items?page=${sequence % 9}`;
  return {
    request_id: `scale-ingest-${process.pid}-${sequence}`,
    ts: new Date().toISOString(),
    kind: 'http',
    device_uuid: deviceUuid,
    payload: {
      method: sequence % 5 === 0 ? 'POST' : 'GET',
      scheme: 'https',
      host,
      path,
      url: `https://${host}${path}`,
      statusCode: sequence % 17 === 0 ? 404 : 200,
      requestHeaders: [
        ['host', host],
        ['user-agent', 'BenchApp/1.0'],
      ],
      responseHeaders: [['content-type', 'application/json']],
      timings: { wait: sequence % 300, receive: sequence % 7, total: 20 + (sequence % 300) },
      sizes: { requestBody: 0, responseBody: (sequence * 7919) % 65536 },
      source: 'pac',
      client: { ip: '10.0.0.2', port: 40000 + (sequence % 20000) },
    },
  };
}

function newWriter(dbUrl: string, spoolDir: string): CaptureWriter {
  return new CaptureWriter({ dbUrl, spoolDir, logger: pino({ level: 'silent' }) });
}

async function writeBatch(writer: CaptureWriter, deviceUuids: string[]): Promise<number> {
  for (let index = 0; index < BATCH; index += 1) {
    writer.enqueue(syntheticCapture(deviceUuids[index % deviceUuids.length] as string));
  }
  const started = performance.now();
  await writer.flush();
  return performance.now() - started;
}

const summary = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted.at(-1) ?? 0,
  };
};

/**
 * `captures` written back to back in the writer's batches: captures/s over the whole run, the
 * batches' latency, and how many of the sent captures are in `entries` afterwards.
 */
export async function measureIngest(
  dbUrl: string,
  db: pg.Client,
  options: { captures: number; deviceUuids: string[]; label: string },
): Promise<{ row: string; perSecond: number }> {
  const spoolDir = mkdtempSync(join(tmpdir(), 'bench-scale-spool-'));
  const writer = newWriter(dbUrl, spoolDir);
  const firstSequence = sequence + 1;
  const times: number[] = [];
  const started = performance.now();
  try {
    for (let sent = 0; sent < options.captures; sent += BATCH) {
      times.push(await writeBatch(writer, options.deviceUuids));
    }
  } finally {
    await writer.stop();
    rmSync(spoolDir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const sent = sequence - firstSequence + 1;
  const requestIds = Array.from(
    { length: sent },
    (_, index) => `scale-ingest-${process.pid}-${firstSequence + index}`,
  );
  const { rows } = await db.query<{ stored: number }>(
    'select count(*)::int as stored from public.entries where request_id = any($1::text[])',
    [requestIds],
  );
  const stats = writer.stats();
  const perSecond = sent / seconds;
  const batch = summary(times);
  const lost = sent - (rows[0]?.stored ?? 0);
  const row =
    `| ${options.label} | ${Math.round(perSecond).toLocaleString('en')} | ` +
    `${(rows[0]?.stored ?? 0).toLocaleString('en')} / ${sent.toLocaleString('en')}` +
    `${lost ? ` (${lost} missing, ${stats.spooled} spooled, ${stats.rejected} rejected)` : ''} | ` +
    `${batch.p50.toFixed(1)} / ${batch.p95.toFixed(1)} / ${batch.max.toFixed(1)} |`;
  return { row, perSecond };
}

/** Runs `step` back to back until `stop` is set, recording each step's time, start and failure. */
async function loop(step: () => Promise<unknown>, stop: { set: boolean }) {
  const samples: Sample[] = [];
  while (!stop.set) {
    const at = performance.now();
    let failed: string | undefined;
    try {
      await step();
    } catch (error) {
      failed = (error as Error).message.slice(0, 80);
    }
    samples.push({ at, ms: performance.now() - at, failed });
  }
  return samples;
}

interface Sample {
  at: number;
  ms: number;
  failed?: string;
}

interface RetentionPhase {
  label: string;
  /** A report scanning every partition runs while the job does. */
  withReport: boolean;
  /** The job; resolves to how many partitions it dropped. */
  job: (db: pg.Client) => Promise<number>;
}

/** The job as it was: locks waited for without bound, in the job's one transaction. */
async function unboundedDrop(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.entries'::regclass order by 1 limit 1`,
  );
  const name = rows[0]?.name;
  if (!name) return 0;
  await db.query('begin');
  await db.query(`lock table private.${name} in access exclusive mode`);
  await db.query(`alter table public.entries detach partition private.${name}`);
  await db.query(`drop table private.${name}`);
  await db.query('commit');
  return 1;
}

const boundedDrop = async (db: pg.Client) =>
  (
    await db.query<{ dropped: number }>(
      'select private.drop_expired_entries_partitions(1) as dropped',
    )
  ).rows[0]?.dropped ?? 0;

/**
 * Sets retention to keep `weeks - 4` weeks, then runs the retention job three times while the
 * writer ingests and a member reads the newest page: beside a report (an exact count over every
 * partition, as an export or an analyst's query is), as the job is now and as it was, and alone.
 * Reports, as markdown lines, what each run dropped, how long it took, and the worst ingest batch
 * and page read before and while it ran.
 */
export async function measureRetentionUnderLoad(
  dbUrl: string,
  db: pg.Client,
  options: { deviceUuids: string[]; weeks: number; read: () => Promise<unknown> },
): Promise<string[]> {
  await db.query(
    `update public.settings_global
     set data = jsonb_set(data, '{entries_retention_weeks}', to_jsonb($1::int)) where id = 1`,
    [options.weeks - 4],
  );
  const phases: RetentionPhase[] = [
    { label: 'now, beside a report', withReport: true, job: boundedDrop },
    { label: 'as it was (no lock timeout), beside a report', withReport: true, job: unboundedDrop },
    { label: 'now, alone', withReport: false, job: boundedDrop },
  ];
  const lines = [
    '| retention job | dropped | job ms | report ms | ingest batch p50 / p95 / max ms: before, during | member newest page p50 / p95 / max ms: before, during |',
    '|---|---|---|---|---|---|',
  ];
  for (const phase of phases) lines.push(await retentionPhase(dbUrl, db, options, phase));
  return lines;
}

async function retentionPhase(
  dbUrl: string,
  db: pg.Client,
  options: { deviceUuids: string[]; read: () => Promise<unknown> },
  phase: RetentionPhase,
): Promise<string> {
  const spoolDir = mkdtempSync(join(tmpdir(), 'bench-scale-spool-'));
  const writer = newWriter(dbUrl, spoolDir);
  const reporter = new pg.Client({ connectionString: dbUrl });
  await reporter.connect();
  const stop = { set: false };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    const ingest = loop(() => writeBatch(writer, options.deviceUuids), stop);
    const reads = loop(options.read, stop);
    await sleep(2_000);
    const calmUntil = performance.now();
    let reportEnded = 0;
    const report = phase.withReport
      ? reporter
          .query(
            `select count(*) from public.entries where payload ->> 'url' like '%no-such-term%'`,
          )
          .then(() => {
            reportEnded = performance.now();
          })
      : Promise.resolve();
    await sleep(200);
    const jobStarted = performance.now();
    const dropped = await phase.job(db);
    const jobEnded = performance.now();
    await report;
    const reportMs = phase.withReport ? `${(reportEnded - calmUntil).toFixed(0)}` : '–';
    await sleep(1_000);
    stop.set = true;
    const [ingestSamples, readSamples] = await Promise.all([ingest, reads]);
    const split = (samples: Sample[]) => {
      const during = samples.filter((s) => s.at + s.ms >= jobStarted && s.at <= jobEnded);
      const failures = samples.filter((s) => s.failed);
      return (
        `${format(summary(samples.filter((s) => s.at + s.ms < calmUntil).map((s) => s.ms)))}, ` +
        format(summary(during.map((s) => s.ms))) +
        (failures.length ? ` (**${failures.length} failed**: ${failures[0]?.failed})` : '')
      );
    };
    return (
      `| ${phase.label} | ${dropped} | ${(jobEnded - jobStarted).toFixed(0)} | ${reportMs} | ` +
      `${split(ingestSamples)} | ${split(readSamples)} |`
    );
  } finally {
    stop.set = true;
    await writer.stop();
    await reporter.end();
    rmSync(spoolDir, { recursive: true, force: true });
  }
}

function format(times: { p50: number; p95: number; max: number }): string {
  return `${times.p50.toFixed(1)} / ${times.p95.toFixed(1)} / ${times.max.toFixed(1)}`;
}
