// Breakpoints that hold live traffic (001 §2.2, §3; docs/proxy.md "Breakpoints"): the patterns of
// the settings (settings_global merged with each device's settings by
// effective_settings_for_device), and the exchanges held on them. A held exchange is a
// breakpoint_events row (resumed_at null, the message as captured, proxy_instance = this proxy); it
// is released when the row is resumed (REST PATCH, the tool server, the dashboard), which this
// proxy hears by NOTIFY and answers within milliseconds; a held row deleted (alone or with its
// device) aborts its exchange the same way. Limits (docs/proxy.md): a hold lasts at most
// `holdTimeoutMs`, then the exchange continues unchanged (closed_by_proxy 'timeout'); at most
// `maxHeld` exchanges are held at once (beyond, traffic flows unheld and the capture says so); on
// stop every held client gets 503 and its row is closed (aborted, 'proxy_stopped'); rows of a proxy
// that died are closed by it when it starts again ('proxy_restarted') or, if it never does, by any
// other proxy once they are older than the hold limit plus a minute ('proxy_lost'). Another proxy's
// rows are otherwise never touched: only the holder can release its client.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { DatabaseEvents } from '../database-events.ts';
import { asServiceRole } from '../service-role.ts';
import {
  type BreakpointPattern,
  compileBreakpoints,
  type ExchangeTarget,
  matches,
  type Phase,
} from './patterns.ts';

export type ClosedByProxy =
  | 'timeout'
  | 'proxy_stopped'
  | 'proxy_restarted'
  | 'proxy_lost'
  | 'client_gone';

/** How a held exchange goes on. */
export type Outcome =
  | { resolution: 'continue'; closedByProxy?: 'timeout' }
  | { resolution: 'modify'; message: Record<string, unknown> }
  | {
      resolution: 'abort';
      closedByProxy?: ClosedByProxy;
      /** The held row was deleted (by its owner, or with its device): nobody to resume it. */
      eventDeleted?: true;
    };

/** What the capture records of a breakpoint (payload.breakpoints[]). */
export interface BreakpointRecord {
  eventId: number | null;
  phase: Phase;
  pattern: string;
  heldMs: number;
  resolution: Outcome['resolution'] | null;
  closedByProxy?: ClosedByProxy;
  resumedBy?: string | null;
  /** The event row was deleted while held: aborted, and the row (eventId) no longer exists. */
  eventDeleted?: true;
  /** Set when a matching exchange was not held, and why. */
  notHeld?: 'max_held' | 'database_unavailable' | 'body_too_large';
}

export interface HoldRequest {
  deviceUuid: string;
  requestId: string;
  phase: Phase;
  pattern: BreakpointPattern;
  method: string;
  url: string;
  message: Record<string, unknown>;
  /** Aborted when the client goes away while held. */
  signal: AbortSignal;
}

export interface BreakpointOptions {
  pool: pg.Pool;
  events: DatabaseEvents;
  /** This proxy's name on the rows it holds: stable across restarts of the same daemon. */
  instanceId: string;
  /** Longest hold before the exchange continues on its own (default 5 min). */
  holdTimeoutMs?: number;
  /** Exchanges held at once (default 200). */
  maxHeld?: number;
  logger: Logger;
}

export const DEFAULT_HOLD_TIMEOUT_MS = 5 * 60_000;
export const DEFAULT_MAX_HELD = 200;
/** Lost instances' rows are closed this long after the hold limit would have released them. */
const LOST_GRACE_MS = 60_000;
const SWEEP_INTERVAL_MS = 30_000;
/** A resume heard before this proxy learned the row's id (a fast API caller) is kept this long. */
const EARLY_RESUME_MS = 10_000;

interface Hold {
  startedAt: number;
  timer: NodeJS.Timeout;
  settle(outcome: Outcome, resumedBy?: string | null): void;
}

interface EventRow {
  resolution: Outcome['resolution'] | null;
  modified_message: Record<string, unknown> | null;
  resumed_by: string | null;
  closed_by_proxy: ClosedByProxy | null;
}

export class Breakpoints {
  private readonly pool: pg.Pool;
  private readonly instanceId: string;
  private readonly logger: Logger;
  readonly holdTimeoutMs: number;
  readonly maxHeld: number;
  /** Patterns by device uuid; `global` for devices without their own `breakpoints`. */
  private global: BreakpointPattern[] = [];
  private byDevice = new Map<string, BreakpointPattern[]>();
  /** False while no pattern is set anywhere: then nothing per request costs more than this. */
  active = false;
  private readonly holds = new Map<number, Hold>();
  private readonly earlyResumes = new Map<number, number>();
  private sweeper: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private nextReload: Promise<void> | undefined;
  private stopping = false;

  constructor(options: BreakpointOptions) {
    this.pool = options.pool;
    this.instanceId = options.instanceId;
    this.logger = options.logger;
    this.holdTimeoutMs = options.holdTimeoutMs ?? DEFAULT_HOLD_TIMEOUT_MS;
    this.maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD;
    options.events.on('proxy_settings_changed', () => void this.reload());
    // "<id> <instance>": another instance's rows are not ours to release. A resumed row and a
    // deleted one are handled alike: the row (or its absence) says how the exchange goes on.
    const onEnded = (payload: string) => {
      const space = payload.indexOf(' ');
      if (payload.slice(space + 1) !== this.instanceId) return;
      this.ended(Number(payload.slice(0, space)));
    };
    options.events.on('proxy_breakpoint_resumed', onEnded);
    options.events.on('proxy_breakpoint_deleted', onEnded);
    options.events.onConnected(async () => {
      await Promise.all([this.reload(), this.recheckHolds()]);
    });
  }

  get heldCount(): number {
    return this.holds.size;
  }

  /** Closes what this instance held before a restart, loads the patterns, sweeps lost rows. */
  async start(): Promise<void> {
    await closeHoldsOfEarlierRun(this.pool, this.instanceId, this.logger);
    await this.reload();
    await this.sweep();
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /** The first pattern of this device's effective settings matching the exchange. */
  match(
    deviceUuid: string | null,
    phase: Phase,
    target: ExchangeTarget,
  ): BreakpointPattern | undefined {
    if (!this.active || !deviceUuid || this.stopping) return undefined;
    const patterns = this.byDevice.get(deviceUuid) ?? this.global;
    for (const pattern of patterns) if (matches(pattern, phase, target)) return pattern;
    return undefined;
  }

  /**
   * Holds an exchange until its row is resumed, the hold limit passes, the client goes away or
   * the proxy stops. Resolves with the outcome and the record for the capture; an exchange that
   * cannot be held (limit reached, database away) continues at once and says why.
   */
  async hold(request: HoldRequest): Promise<{ outcome: Outcome; record: BreakpointRecord }> {
    const record: BreakpointRecord = {
      eventId: null,
      phase: request.phase,
      pattern: request.pattern.source,
      heldMs: 0,
      resolution: null,
    };
    if (this.holds.size >= this.maxHeld) {
      return { outcome: { resolution: 'continue' }, record: { ...record, notHeld: 'max_held' } };
    }
    const startedAt = performance.now();
    let id: number;
    try {
      const { rows } = await this.asService<{ id: string }>(
        `insert into public.breakpoint_events
           (device_uuid, request_id, phase, pattern, method, url, message, proxy_instance)
         values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
        [
          request.deviceUuid,
          request.requestId,
          request.phase,
          request.pattern.source.slice(0, 2000),
          request.method,
          request.url,
          JSON.stringify(request.message),
          this.instanceId,
        ],
      );
      id = Number(rows[0]?.id);
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot record a breakpoint; the exchange goes on unheld');
      return {
        outcome: { resolution: 'continue' },
        record: { ...record, notHeld: 'database_unavailable' },
      };
    }
    record.eventId = id;
    const settled = new Promise<{ outcome: Outcome; resumedBy?: string | null }>((resolve) => {
      const hold: Hold = {
        startedAt,
        timer: setTimeout(() => void this.closeByProxy(id, 'timeout'), this.holdTimeoutMs),
        settle: (outcome, resumedBy) => {
          clearTimeout(hold.timer);
          this.holds.delete(id);
          resolve({ outcome, resumedBy });
        },
      };
      this.holds.set(id, hold);
    });
    const onAbort = () => void this.closeByProxy(id, 'client_gone');
    if (request.signal.aborted || this.stopping) {
      void this.closeByProxy(id, this.stopping ? 'proxy_stopped' : 'client_gone');
    } else {
      request.signal.addEventListener('abort', onAbort, { once: true });
    }
    if (this.earlyResumes.delete(id)) this.ended(id);
    const { outcome, resumedBy } = await settled;
    request.signal.removeEventListener('abort', onAbort);
    return {
      outcome,
      record: {
        ...record,
        heldMs: Math.round((performance.now() - startedAt) * 100) / 100,
        resolution: outcome.resolution,
        ...('closedByProxy' in outcome && outcome.closedByProxy
          ? { closedByProxy: outcome.closedByProxy }
          : 'eventDeleted' in outcome && outcome.eventDeleted
            ? { eventDeleted: true as const }
            : { resumedBy: resumedBy ?? null }),
      },
    };
  }

  /** Every held client is answered (503) and its row closed; nothing new is held. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.holds.keys()].map((id) => this.closeByProxy(id, 'proxy_stopped')));
  }

  /**
   * Re-reads every pattern (one query). A call while a read runs waits on one more read after
   * it, shared by every such call: what it was called for (a change just committed) is in what
   * it waits on, and nothing it started is left running when it resolves.
   */
  reload(): Promise<void> {
    if (this.reloading) {
      this.nextReload ??= this.reloading.then(() => {
        this.nextReload = undefined;
        return this.reload();
      });
      return this.nextReload;
    }
    this.reloading = this.load()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'cannot load breakpoints'))
      .finally(() => {
        this.reloading = undefined;
      });
    return this.reloading;
  }

  private async load(): Promise<void> {
    // Devices whose own settings name `breakpoints` replace the global list (arrays are replaced
    // by the deep merge of effective_settings_for_device); every other device has the global one.
    const { rows } = await this.asService<{ device_uuid: string | null; breakpoints: unknown }>(
      `select null::uuid as device_uuid, g.data -> 'breakpoints' as breakpoints
       from public.settings_global g where g.id = 1
       union all
       select s.device_uuid, public.effective_settings_for_device(s.device_uuid) -> 'breakpoints'
       from public.settings_device s where s.data ? 'breakpoints'`,
    );
    let global: BreakpointPattern[] = [];
    const byDevice = new Map<string, BreakpointPattern[]>();
    for (const row of rows) {
      const { patterns, problems } = compileBreakpoints(row.breakpoints);
      if (problems.length > 0) {
        this.logger.warn({ device: row.device_uuid, problems }, 'breakpoint patterns skipped');
      }
      if (row.device_uuid === null) global = patterns;
      else byDevice.set(row.device_uuid, patterns);
    }
    this.global = global;
    this.byDevice = byDevice;
    this.active = global.length > 0 || [...byDevice.values()].some((list) => list.length > 0);
  }

  /** A row was resumed or deleted (NOTIFY): release its exchange if this proxy holds it. */
  private ended(id: number): void {
    if (!Number.isSafeInteger(id)) return;
    if (!this.holds.has(id)) {
      // A row of this instance whose insert has not returned its id yet (a fast resumer), or one
      // this instance resumed itself. Kept briefly; oldest first, so the sweep stops early.
      const now = Date.now();
      for (const [early, at] of this.earlyResumes) {
        if (now - at <= EARLY_RESUME_MS) break;
        this.earlyResumes.delete(early);
      }
      this.earlyResumes.set(id, now);
      return;
    }
    void this.release(id);
  }

  private async release(id: number): Promise<void> {
    try {
      const row = await this.eventRow(id);
      // A held id's row was committed before it was held, so no row means it was deleted.
      if (!row) this.settleDeleted(id);
      else if (row.resolution) this.settleFromRow(id, row);
    } catch (error) {
      // The hold limit or the next reconnection will release it.
      this.logger.warn({ err: error, id }, 'cannot read a resumed breakpoint');
    }
  }

  /** Its row is gone: nothing can resume it any more, so the exchange is aborted now. */
  private settleDeleted(id: number): void {
    this.holds.get(id)?.settle({ resolution: 'abort', eventDeleted: true });
  }

  private settleFromRow(id: number, row: EventRow): void {
    const hold = this.holds.get(id);
    if (!hold || !row.resolution) return;
    if (row.resolution === 'modify' && row.modified_message) {
      hold.settle({ resolution: 'modify', message: row.modified_message }, row.resumed_by);
    } else if (row.resolution === 'abort') {
      hold.settle(
        row.closed_by_proxy
          ? { resolution: 'abort', closedByProxy: row.closed_by_proxy }
          : { resolution: 'abort' },
        row.resumed_by,
      );
    } else {
      hold.settle(
        row.closed_by_proxy === 'timeout'
          ? { resolution: 'continue', closedByProxy: 'timeout' }
          : { resolution: 'continue' },
        row.resumed_by,
      );
    }
  }

  /**
   * The proxy resumes a row itself: timeout continues unchanged, everything else aborts. When
   * someone resumed it first, their resolution stands. The client is released even when the
   * database cannot be written (the sweep of a later start closes the row).
   */
  private async closeByProxy(id: number, reason: ClosedByProxy): Promise<void> {
    const hold = this.holds.get(id);
    if (!hold) return;
    const resolution = reason === 'timeout' ? 'continue' : 'abort';
    try {
      const { rowCount } = await this.asService(
        `update public.breakpoint_events set resolution = $2, closed_by_proxy = $3
         where id = $1 and resumed_at is null`,
        [id, resolution, reason],
      );
      if (rowCount === 0) {
        const row = await this.eventRow(id);
        if (row?.resolution) {
          this.settleFromRow(id, row);
          return;
        }
      }
    } catch (error) {
      this.logger.warn({ err: error, id, reason }, 'cannot close a breakpoint row');
    }
    hold.settle(
      reason === 'timeout'
        ? { resolution: 'continue', closedByProxy: 'timeout' }
        : { resolution: 'abort', closedByProxy: reason },
    );
  }

  /** Once LISTEN is up: resumes and deletes that happened while nobody listened. */
  private async recheckHolds(): Promise<void> {
    const ids = [...this.holds.keys()];
    if (ids.length === 0) return;
    await this.asService<EventRow & { id: string }>(
      `select id, resolution, modified_message, resumed_by, closed_by_proxy
       from public.breakpoint_events where id = any ($1::bigint[])`,
      [ids],
    ).then(
      ({ rows }) => {
        const present = new Set<number>();
        for (const row of rows) {
          present.add(Number(row.id));
          if (row.resolution) this.settleFromRow(Number(row.id), row);
        }
        for (const id of ids) if (!present.has(id)) this.settleDeleted(id);
      },
      (error: unknown) => this.logger.warn({ err: error }, 'cannot re-check held breakpoints'),
    );
  }

  /** Rows of proxies that went away for good: aborted once well past the hold limit. */
  private async sweep(): Promise<void> {
    try {
      await this.asService(
        `update public.breakpoint_events set resolution = 'abort', closed_by_proxy = 'proxy_lost'
         where resumed_at is null and proxy_instance is not null and proxy_instance <> $1
           and held_at < now() - make_interval(secs => $2)`,
        [this.instanceId, (this.holdTimeoutMs + LOST_GRACE_MS) / 1000],
      );
    } catch (error) {
      this.logger.warn({ err: error }, 'breakpoint sweep failed');
    }
  }

  private async eventRow(id: number): Promise<EventRow | undefined> {
    const { rows } = await this.asService<EventRow>(
      `select resolution, modified_message, resumed_by, closed_by_proxy
       from public.breakpoint_events where id = $1`,
      [id],
    );
    return rows[0];
  }

  private asService<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
    return asServiceRole<T>(this.pool, sql, values);
  }
}

/**
 * Closes the rows an earlier run of this instance left held ('proxy_restarted'): its own, and
 * those of its worker processes (`<instance>#<n>`; workers/primary.ts calls this before any
 * worker starts, so a daemon run with fewer workers than before leaves none held).
 */
export async function closeHoldsOfEarlierRun(
  pool: pg.Pool,
  instanceId: string,
  logger: Logger,
): Promise<void> {
  const closed = await asServiceRole(
    pool,
    `update public.breakpoint_events set resolution = 'abort', closed_by_proxy = 'proxy_restarted'
     where (proxy_instance = $1 or starts_with(proxy_instance, $1 || '#')) and resumed_at is null`,
    [instanceId],
  );
  if (closed.rowCount)
    logger.warn({ closed: closed.rowCount }, 'closed breakpoints held before a restart');
}
