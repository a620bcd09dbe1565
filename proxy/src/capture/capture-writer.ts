// Writes captures to Postgres in batches from a bounded in-memory queue. While Postgres is
// unreachable, batches go to an append-only spool file on disk and are replayed when it
// returns; `on conflict do nothing` on (request_id, ts) makes a replay of a batch that did land
// harmless, so every capture is stored exactly once.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Capture } from './capture.ts';

export interface CaptureWriterOptions {
  dbUrl: string;
  spoolDir: string;
  logger: Logger;
  /** Rows per INSERT. */
  batchSize?: number;
  /** A non-full batch waits at most this long. */
  flushIntervalMs?: number;
  /** Captures held in memory; beyond this they go straight to the spool. */
  maxQueued?: number;
}

export interface CaptureWriterStats {
  queued: number;
  spooled: number;
  written: number;
  databaseUp: boolean;
}

// One statement per batch: the entries (a device deleted since the capture leaves the row
// unattributed instead of failing the batch on the foreign key), then each device's
// last_seen_at (never moved back by a late replay) and device_status (address and source of its
// newest capture), which is what makes a device "online" (001 §2.2).
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
      (b.payload -> 'client' ->> 'ip')::inet as ip, b.payload ->> 'source' as source
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

export class CaptureWriter {
  private readonly options: Required<Omit<CaptureWriterOptions, 'logger'>> & { logger: Logger };
  private readonly pool: pg.Pool;
  private readonly spoolFile: string;
  private queue: Capture[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private spooledCount = 0;
  private writtenCount = 0;
  private databaseUp = true;
  private stopped = false;

  constructor(options: CaptureWriterOptions) {
    this.options = { batchSize: 500, flushIntervalMs: 100, maxQueued: 50_000, ...options };
    mkdirSync(options.spoolDir, { recursive: true });
    this.spoolFile = join(options.spoolDir, 'captures.jsonl');
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
    if (this.queue.length >= this.options.maxQueued) {
      this.spool([capture]);
      return;
    }
    this.queue.push(capture);
    if (this.queue.length >= this.options.batchSize) {
      setTimeout(() => void this.flush(), 0).unref();
    }
  }

  stats(): CaptureWriterStats {
    return {
      queued: this.queue.length,
      spooled: this.spooledCount,
      written: this.writtenCount,
      databaseUp: this.databaseUp,
    };
  }

  /** Writes everything queued (or spools it); resolves when done. */
  async flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushOnce());
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

  private async flushOnce(): Promise<void> {
    await this.replaySpool();
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.batchSize);
      if (!this.databaseUp) {
        this.spool(batch);
        continue;
      }
      try {
        await this.insert(batch);
      } catch (error) {
        this.markDown(error);
        this.spool(batch);
      }
    }
  }

  private async insert(batch: Capture[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      await client.query('set local role service_role');
      const result = await client.query(INSERT, [JSON.stringify(batch)]);
      await client.query('commit');
      this.writtenCount += (result.rows[0] as { written: number }).written;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private markDown(error: unknown): void {
    if (this.databaseUp) {
      this.options.logger.warn({ err: error }, 'database unreachable; spooling captures to disk');
    }
    this.databaseUp = false;
  }

  private spool(captures: Capture[]): void {
    const lines = captures.map((capture) => JSON.stringify(capture)).join('\n');
    appendFileSync(this.spoolFile, `${lines}\n`);
    this.spooledCount += captures.length;
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
   * to a fresh file), written in batches, and removed only when every batch landed.
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
    const captures = readFileSync(replaying, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Capture);
    try {
      for (let start = 0; start < captures.length; start += this.options.batchSize) {
        await this.insert(captures.slice(start, start + this.options.batchSize));
      }
    } catch (error) {
      // Still down: keep the file for the next attempt (replays are idempotent).
      this.markDown(error);
      return;
    }
    rmSync(replaying);
    this.spooledCount = this.countSpooled();
    this.databaseUp = true;
    this.options.logger.info({ replayed: captures.length }, 'spooled captures written');
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
