// The tool server's Postgres pool and the one place store failures are classified: an outage
// (refused or dropped connection, timeouts, a server shutting down or full) becomes
// StoreUnavailableError, which the OAuth endpoints answer with 503 + Retry-After (001 §7); any
// other failure is a genuine fault (500). A pool with a fair queue hands out its connections
// round-robin per caller (pool-slots.ts, docs/tool-server.md "Fair use").
import pg from 'pg';
import type { Logger } from 'pino';
import { PoolBusyError, type PoolLane, PoolSlots } from './pool-slots.ts';

export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('store unavailable', { cause });
    this.name = 'StoreUnavailableError';
  }
}

const OUTAGE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATE classes and codes that mean "the store is not there right now": 08 connection
 * exceptions, 53 insufficient resources, 57P01-57P03 shutdown/cannot connect, 57014 a statement
 * cut by our own timeout, 40001/40P01 serialization failure or deadlock.
 */
function isOutageSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    ['57P01', '57P02', '57P03', '57014', '40001', '40P01'].includes(code)
  );
}

export function isStoreOutage(error: unknown): boolean {
  if (error instanceof StoreUnavailableError || error instanceof PoolBusyError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (OUTAGE_ERRNOS.has(code) || isOutageSqlState(code))) return true;
  // node-postgres reports these without a code.
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection timeout/i.test(
    error.message,
  );
}

export interface Database {
  /**
   * One statement on the server's own connection. A `statementName` prepares it once per
   * connection and reuses its plan, as PostgREST does with its prepared statements: for the
   * statements of every request, whose text is fixed.
   */
  query<Row extends pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    statementName?: string,
  ): Promise<Row[]>;
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /**
   * A transaction run as the API caller, exactly as PostgREST runs a request: role
   * `authenticated`, the token's claims in `request.jwt.claims` (so auth.uid(), RLS and
   * has_capability see the caller) and the API's statement timeout (001 §8: 8 s). With a fair
   * queue, the connection waits for the caller's (`sub`) turn, in `lane`.
   */
  asCaller<T>(
    claims: Record<string, unknown>,
    work: (client: pg.PoolClient) => Promise<T>,
    options?: CallerTransaction,
  ): Promise<T>;
  close(): Promise<void>;
}

/** How a caller's transaction runs. */
export interface CallerTransaction {
  /** The fair queue's lane its connection is taken in (default standard). */
  lane?: PoolLane;
  /**
   * `begin read only`: Postgres refuses any write in it, so once `work` has returned there is
   * nothing left to make durable, and the result is answered while the commit travels (one round
   * trip less per read-only tool call; the connection and its slot return once it has).
   */
  readOnly?: boolean;
}

export interface DatabaseOptions {
  timeoutMs: number;
  /** Connections at most (default 10). */
  max?: number;
  /** Hand the connections out through a fair queue (PoolSlots) with these limits. */
  fairQueue?: { searchSlots: number; waitMs: number };
}

/** Who waits for a connection taken without a caller: the server's own work. */
const SERVER_QUEUE = '';

export function createDatabase(url: string, logger: Logger, options: DatabaseOptions): Database {
  const max = options.max ?? 10;
  // As many slots as connections: a connection is only asked for once a slot is granted, so the
  // pool's own first-come queue stays empty.
  const slots = options.fairQueue && new PoolSlots({ slots: max, ...options.fairQueue });
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // Fail fast when Postgres is away, so the answer comes within the endpoint deadline.
    connectionTimeoutMillis: Math.min(2_000, options.timeoutMs),
    query_timeout: options.timeoutMs,
    statement_timeout: options.timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: 'tool-server',
  });
  // An idle client whose server went away must not crash the process.
  pool.on('error', (error) => logger.warn({ err: error }, 'idle database connection lost'));

  const classify = (error: unknown): never => {
    throw isStoreOutage(error) ? new StoreUnavailableError(error) : error;
  };

  /** A slot first (when the pool has a fair queue), and only then a connection. */
  const withSlot = async <T>(queue: string, lane: PoolLane, work: () => Promise<T>) => {
    const release = await slots?.acquire(queue, lane);
    try {
      return await work();
    } finally {
      release?.();
    }
  };

  /**
   * `opening` starts the transaction: `begin`, or `begin` and settings in one round trip.
   * `commitAfterAnswer` is for read-only transactions (CallerTransaction.readOnly).
   */
  const transactionIn = async <T>(
    queue: string,
    lane: PoolLane,
    work: (client: pg.PoolClient) => Promise<T>,
    opening = 'begin',
    commitAfterAnswer = false,
  ): Promise<T> => {
    let releaseSlot: (() => void) | undefined;
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    try {
      releaseSlot = await slots?.acquire(queue, lane);
      client = await pool.connect();
      await client.query(opening);
      const result = await work(client);
      if (commitAfterAnswer) {
        const [held, slot] = [client, releaseSlot];
        [client, releaseSlot] = [undefined, undefined];
        held
          .query('commit')
          .then(
            () => held.release(),
            (error: Error) => held.release(error),
          )
          .finally(() => slot?.());
        return result;
      }
      await client.query('commit');
      return result;
    } catch (error) {
      await client?.query('rollback').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      return classify(error);
    } finally {
      // A connection whose rollback failed is destroyed rather than returned to the pool.
      client?.release(broken);
      releaseSlot?.();
    }
  };

  const database: Database = {
    async query<Row extends pg.QueryResultRow>(
      text: string,
      values?: unknown[],
      statementName?: string,
    ) {
      try {
        return await withSlot(SERVER_QUEUE, 'standard', async () => {
          return (await pool.query<Row>({ text, values, name: statementName })).rows;
        });
      } catch (error) {
        return classify(error);
      }
    },
    transaction: (work) => transactionIn(SERVER_QUEUE, 'standard', work),
    asCaller(claims, work, { lane = 'standard', readOnly = false } = {}) {
      // One simple-protocol round trip for begin and the caller's settings instead of two (a
      // tool call is three round trips, PostgREST's one pipelined transaction); the claims go in
      // as a literal quoted by pg's escapeLiteral, never spliced raw.
      const opening = `${readOnly ? 'begin read only' : 'begin'};
        select set_config('role', 'authenticated', true),
        set_config('request.jwt.claims', ${pg.escapeLiteral(JSON.stringify(claims))}, true),
        set_config('statement_timeout', '8s', true)`;
      return transactionIn(String(claims.sub ?? ''), lane, work, opening, readOnly);
    },
    close: () => pool.end(),
  };
  return database;
}
