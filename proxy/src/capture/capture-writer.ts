// Writes captures to Postgres in batches from a bounded in-memory queue. While Postgres is
// unreachable, batches go to an append-only spool file on disk and are replayed when it
// returns; `on conflict do nothing` on (request_id, ts) makes a replay of a batch that did land
// harmless, so every capture is stored exactly once.
//
// A batch Postgres refuses for its content (not for being away) is written again row by row, and
// a row refused on its own goes to a dead-letter file with the reason: one bad capture never
// holds back the others, and nothing is dropped silently.
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Capture } from './capture.ts';

export interface CaptureWriterOptions {
  dbUrl: string;
  spoolDir: string;
  logger: Logger;
  /** Rows per INSERT at most. */
  batchSize?: number;
  /** Serialized bytes per INSERT at most (jsonb caps one value at 256 MB). */
  batchBytes?: number;
  /** A non-full batch waits at most this long. */
  flushIntervalMs?: number;
  /** Captures held in memory; beyond this they go straight to the spool. */
  maxQueued?: number;
  /** Serialized bytes held in memory; beyond this captures go straight to the spool. */
  maxQueuedBytes?: number;
}

export interface CaptureWriterStats {
  queued: number;
  spooled: number;
  written: number;
  /** Captures Postgres refused on their own, kept in dead-letter.jsonl. */
  rejected: number;
  databaseUp: boolean;
}

// One statement per batch: the entries (a device deleted since the capture leaves the row
// unattributed instead of failing the batch on the foreign key), then each device's
// last_seen_at (never moved back by a late replay) and device_status (address and source of its
// newest capture), which is what makes a device "online" (001 §2.2). The address is cast only
// when it looks like one, so an odd value never fails the batch.
const INSERT = `
  with batch as (
    select c.ts, c.kind, c.request_id, c.device_uuid, c.payload
    from jsonb_to_recordset($1::jsonb)
      as c (ts timestamptz, kind text, request_id text, device_uuid uuid, payload jsonb)
  ), inserted as (
    insert into public.entries (ts, kind, request_id, device_uuid, payload)
    select b.ts, b.kind, b.request_id, d.uuid, b.payload
    from batch b left join public.devices d on d.uuid = b.device_uuid
    on conflict (request_id, ts) do nothing
    returning 1
  ), latest as (
    select distinct on (b.device_uuid) b.device_uuid, b.ts,
      case when b.payload -> 'client' ->> 'ip' ~ '^[0-9A-Fa-f:.]{2,45}$'
        then (b.payload -> 'client' ->> 'ip')::inet end as ip,
      b.payload ->> 'source' as source
    from batch b join public.devices d on d.uuid = b.device_uuid
    order by b.device_uuid, b.ts desc
  ), seen as (
    update public.devices d set last_seen_at = l.ts
    from latest l
    where d.uuid = l.device_uuid and (d.last_seen_at is null or d.last_seen_at < l.ts)
    returning 1
  ), status as (
    insert into public.device_status as s (device_uuid, ip, source)
    select l.device_uuid, l.ip, l.source from latest l
    on conflict (device_uuid) do update set ip = excluded.ip, source = excluded.source
    returning 1
  )
  select (select count(*) from inserted)::int as written`;

/**
 * Only a refusal of the data itself (SQLSTATE class 22, data exception, or 23, integrity
 * constraint) condemns a row. Everything else (the connection, a lock or statement timeout, a
 * deadlock, resources, a missing table during a deployment) is passing trouble: the batch is
 * spooled and retried, never set aside.
 */
function refusedForItsData(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

/** A capture serialized once, when it is queued: the batch and the spool reuse the text. */
type Serialized = string;

export class CaptureWriter {
  private readonly options: Required<Omit<CaptureWriterOptions, 'logger'>> & { logger: Logger };
  private readonly pool: pg.Pool;
  private readonly spoolFile: string;
  private readonly deadLetterFile: string;
  private queue: Serialized[] = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private spooledCount = 0;
  private writtenCount = 0;
  private rejectedCount = 0;
  private databaseUp = true;
  private stopped = false;

  constructor(options: CaptureWriterOptions) {
    this.options = {
      batchSize: 500,
      batchBytes: 16 * 1024 * 1024,
      flushIntervalMs: 100,
      maxQueued: 50_000,
      maxQueuedBytes: 256 * 1024 * 1024,
      ...options,
    };
    mkdirSync(options.spoolDir, { recursive: true });
    this.spoolFile = join(options.spoolDir, 'captures.jsonl');
    this.deadLetterFile = join(options.spoolDir, 'dead-letter.jsonl');
    this.spooledCount = this.countSpooled();
    this.pool = new pg.Pool({
      connectionString: options.dbUrl,
      max: 2,
      connectionTimeoutMillis: 2_000,
      application_name: 'capture-proxy',
    });
    this.pool.on('error', () => undefined);
    this.schedule();
  }

  enqueue(capture: Capture): void {
    const serialized = JSON.stringify(capture);
    if (
      this.stopped || // a capture finished while stopping: the spool keeps it for the next start
      this.queue.length >= this.options.maxQueued ||
      this.queuedBytes + serialized.length > this.options.maxQueuedBytes
    ) {
      this.spool([serialized]);
      return;
    }
    this.queue.push(serialized);
    this.queuedBytes += serialized.length;
    if (this.queue.length >= this.options.batchSize) {
      setTimeout(() => void this.flush(), 0).unref();
    }
  }

  stats(): CaptureWriterStats {
    return {
      queued: this.queue.length,
      spooled: this.spooledCount,
      written: this.writtenCount,
      rejected: this.rejectedCount,
      databaseUp: this.databaseUp,
    };
  }

  /** Writes everything queued (or spools it); resolves when done, and never rejects. */
  async flush(): Promise<void> {
    this.flushing = this.flushing
      .then(() => this.flushOnce())
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'capture flush failed'));
    await this.flushing;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
    await this.pool.end().catch(() => undefined);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.flush().finally(() => this.schedule());
    }, this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Rows cut into batches of at most batchSize rows and batchBytes bytes (at least one row). */
  private batches(rows: Serialized[]): Serialized[][] {
    const batches: Serialized[][] = [];
    let current: Serialized[] = [];
    let bytes = 0;
    for (const row of rows) {
      const full =
        current.length >= this.options.batchSize || bytes + row.length > this.options.batchBytes;
      if (current.length > 0 && full) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      current.push(row);
      bytes += row.length;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  private async flushOnce(): Promise<void> {
    await this.replaySpool();
    while (this.queue.length > 0) {
      const rows = this.queue;
      this.queue = [];
      this.queuedBytes = 0;
      for (const batch of this.batches(rows)) {
        if (!this.databaseUp) {
          this.spool(batch);
          continue;
        }
        try {
          await this.write(batch);
        } catch (error) {
          this.markDown(error);
          this.spool(batch);
        }
      }
    }
  }

  /**
   * Writes a batch; when Postgres refuses its content, row by row, each refused row going to the
   * dead-letter file. Throws only when Postgres is away (the caller spools the batch).
   */
  private async write(batch: Serialized[]): Promise<void> {
    try {
      await this.insert(batch);
      return;
    } catch (error) {
      if (!refusedForItsData(error)) throw error;
      if (batch.length === 1) {
        this.deadLetter(batch[0] as string, error);
        return;
      }
    }
    for (const row of batch) await this.write([row]);
  }

  private async insert(batch: Serialized[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      await client.query('set local role service_role');
      const result = await client.query(INSERT, [`[${batch.join(',')}]`]);
      await client.query('commit');
      this.writtenCount += (result.rows[0] as { written: number }).written;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private deadLetter(row: string, error: unknown): void {
    this.rejectedCount += 1;
    const reason = (error as Error).message ?? String(error);
    this.options.logger.error({ reason }, 'capture refused by Postgres; kept in dead-letter.jsonl');
    appendFileSync(this.deadLetterFile, `${JSON.stringify({ reason, capture: row })}\n`);
  }

  private markDown(error: unknown): void {
    if (this.databaseUp) {
      this.options.logger.warn({ err: error }, 'database unreachable; spooling captures to disk');
    }
    this.databaseUp = false;
  }

  private spool(rows: Serialized[]): void {
    try {
      appendFileSync(this.spoolFile, `${rows.join('\n')}\n`);
      this.spooledCount += rows.length;
    } catch (error) {
      // The disk refuses too (full, read-only): nothing is left to keep them in.
      this.options.logger.error(
        { err: error, lost: rows.length },
        'captures lost: spool unwritable',
      );
    }
  }

  private countSpooled(): number {
    let count = 0;
    for (const file of [this.spoolFile, `${this.spoolFile}.replaying`]) {
      if (existsSync(file)) count += readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
    }
    return count;
  }

  /**
   * Replays the spool once the database answers: the file is renamed first (new spooling goes
   * to a fresh file), written in batches, and removed only when every batch landed. A line that
   * is not JSON (a write cut short by a crash) goes to the dead-letter file.
   */
  private async replaySpool(): Promise<void> {
    const replaying = `${this.spoolFile}.replaying`;
    const pending = existsSync(this.spoolFile) || existsSync(replaying);
    if (!pending) {
      if (!this.databaseUp) this.databaseUp = await this.probe();
      return;
    }
    if (!(await this.probe())) return;
    if (!existsSync(replaying)) renameSync(this.spoolFile, replaying);
    const rows: Serialized[] = [];
    let corrupt = 0;
    for (const line of readFileSync(replaying, 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        JSON.parse(line);
        rows.push(line);
      } catch (error) {
        this.deadLetter(line, error);
        corrupt += 1;
      }
    }
    // Set aside once: a later attempt reads only the good rows.
    if (corrupt > 0) writeFileSync(replaying, rows.map((row) => `${row}\n`).join(''));
    try {
      for (const batch of this.batches(rows)) await this.write(batch);
    } catch (error) {
      // Still down: keep the file for the next attempt (replays are idempotent).
      this.markDown(error);
      return;
    }
    rmSync(replaying);
    this.spooledCount = this.countSpooled();
    this.databaseUp = true;
    this.options.logger.info({ replayed: rows.length }, 'spooled captures written');
  }

  private async probe(): Promise<boolean> {
    try {
      await this.pool.query('select 1');
      return true;
    } catch {
      return false;
    }
  }
}
