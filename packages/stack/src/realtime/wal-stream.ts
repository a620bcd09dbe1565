// Changes from a wal2json (format 2) logical slot owned by this service: a temporary slot on a
// dedicated connection, read with pg_logical_slot_get_changes and limited to the publication's
// tables (how Supabase Realtime's list_changes reads it) plus the credential tables, whose
// revocations must reach open channels in commit order (credentials.ts), and realtime.messages,
// whose inserts are broadcasts from the database (database-broadcast.ts). A partition's change is
// reported under its root table.
import pg from 'pg';
import type { Logger } from 'pino';
import { type Catalog, PUBLICATION } from './catalog.ts';
import type { Change, ChangeColumn, ChangeType } from './change.ts';
import { CREDENTIAL_TABLES } from './credentials.ts';
import { MESSAGE_TABLES } from './database-broadcast.ts';

/** Read besides the publication's tables, never delivered as postgres_changes unless published. */
const EXTRA_TABLES = [...CREDENTIAL_TABLES, ...MESSAGE_TABLES].join(',');

interface Wal2JsonColumn {
  name: string;
  type: string;
  typeoid: number;
  value?: unknown;
}

interface Wal2JsonChange {
  action: string;
  timestamp: string;
  schema: string;
  table: string;
  columns?: Wal2JsonColumn[];
  identity?: Wal2JsonColumn[];
  pk?: Wal2JsonColumn[];
}

const ACTIONS: Record<string, ChangeType> = { I: 'INSERT', U: 'UPDATE', D: 'DELETE' };

/** wal2json's text for timestamps ('2026-11-21 06:15:58.13+00') in ISO form. */
function isoTimestamp(value: string): string {
  return value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
}

/** Realtime's commit_timestamp format: YYYY-MM-DDTHH24:MI:SS.MSZ. */
function commitTimestamp(value: string): string {
  const date = new Date(isoTimestamp(value));
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

export class WalStream {
  private client: pg.Client | null = null;
  private readonly slot = `realtime_${process.pid}_${Date.now().toString(36)}`;
  /**
   * Bumped each time a slot is created: changes committed while no slot existed (after a lost
   * connection) were never read, so whoever relies on seeing every change must re-check.
   */
  generation = 0;

  private readonly dbUrl: string;
  private readonly catalog: Catalog;
  private readonly logger: Logger;

  constructor(dbUrl: string, catalog: Catalog, logger: Logger) {
    this.dbUrl = dbUrl;
    this.catalog = catalog;
    this.logger = logger;
  }

  /** Creates the slot (if needed): changes committed from then on are streamed. */
  async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({ connectionString: this.dbUrl, application_name: 'realtime' });
    client.on('error', (error) => {
      this.logger.warn({ err: error }, 'realtime slot connection lost');
      this.client = null;
    });
    await client.connect();
    // Every read logs "starting logical decoding" at LOG, which ranks above ERROR in the server
    // log; keep it out.
    await client.query('set log_min_messages = fatal');
    await client.query(
      "select pg_catalog.pg_create_logical_replication_slot($1, 'wal2json', true)",
      [this.slot],
    );
    this.client = client;
    this.generation += 1;
    this.logger.info({ slot: this.slot }, 'realtime slot created');
    return client;
  }

  /** Rows read from the slot (so consumed) but not yet turned into changes. */
  private unconverted: Wal2JsonChange[] = [];

  /**
   * The next changes in commit order (at most `max`); [] when there are none. Rows the slot has
   * handed over are kept until they convert, so a failing catalog lookup retries instead of
   * losing them.
   */
  async poll(max: number): Promise<Change[]> {
    if (this.unconverted.length === 0) {
      this.unconverted = await this.read(max);
    }
    const changes: Change[] = [];
    for (const raw of this.unconverted) {
      const change = await this.toChange(raw);
      if (change) changes.push(change);
    }
    this.unconverted = [];
    return changes;
  }

  private async read(max: number): Promise<Wal2JsonChange[]> {
    const client = await this.connect();
    let rows: Array<{ data: string }>;
    try {
      // add-tables is read from the publication in the same round trip, so it is always current;
      // wal2json escapes ',' and '\' in names with a backslash.
      ({ rows } = await client.query<{ data: string }>(
        `select data from pg_catalog.pg_logical_slot_get_changes($1, null, $2,
           'format-version', '2', 'include-pk', '1', 'include-timestamp', '1',
           'include-type-oids', '1', 'include-transaction', '0',
           'actions', 'insert,update,delete',
           'add-tables', (
             select concat_ws(',', string_agg(format('%s.%s',
                      replace(replace(schemaname, '\\', '\\\\'), ',', '\\,'),
                      replace(replace(tablename, '\\', '\\\\'), ',', '\\,')), ','), $3::text)
             from pg_catalog.pg_publication_tables where pubname = $4))`,
        [this.slot, max, EXTRA_TABLES, PUBLICATION],
      ));
    } catch (error) {
      // A broken connection takes its temporary slot along; the next poll starts a new one.
      await client.end().catch(() => undefined);
      this.client = null;
      throw error;
    }
    const parsed: Wal2JsonChange[] = [];
    for (const row of rows) {
      try {
        parsed.push(JSON.parse(row.data) as Wal2JsonChange);
      } catch (error) {
        // wal2json cannot encode some names (a type name with a double quote): that row alone
        // is unreadable.
        this.logger.error(
          { err: error, data: row.data.slice(0, 200) },
          'unreadable wal2json row skipped',
        );
      }
    }
    return parsed;
  }

  private async describe(columns: Wal2JsonColumn[]): Promise<ChangeColumn[]> {
    return Promise.all(
      columns.map(async (column) => ({
        name: column.name,
        type: await this.catalog.typeName(column.typeoid),
        sqlType: await this.catalog.sqlTypeName(column.typeoid),
      })),
    );
  }

  private recordOf(columns: Wal2JsonColumn[], types: ChangeColumn[]): Record<string, unknown> {
    const record: Record<string, unknown> = {};
    columns.forEach((column, index) => {
      const type = types[index]?.type ?? '';
      let value = column.value ?? null;
      if (typeof value === 'string' && (type === 'json' || type === 'jsonb')) {
        try {
          value = JSON.parse(value);
        } catch {
          // keep the text
        }
      } else if (typeof value === 'string' && (type === 'timestamptz' || type === 'timestamp')) {
        value = isoTimestamp(value);
      }
      record[column.name] = value;
    });
    return record;
  }

  private async toChange(raw: Wal2JsonChange): Promise<Change | null> {
    const type = ACTIONS[raw.action];
    if (!type) return null;
    const table = await this.catalog.rootOf({ schema: raw.schema, table: raw.table });
    const newColumns = raw.columns ?? [];
    const oldColumns = raw.identity ?? [];
    const columnTypes = await this.describe(newColumns.length > 0 ? newColumns : oldColumns);
    const primaryKey = await this.describe(raw.pk ?? []);
    const record = type === 'DELETE' ? null : this.recordOf(newColumns, columnTypes);
    const oldRecord =
      oldColumns.length > 0 ? this.recordOf(oldColumns, await this.describe(oldColumns)) : null;
    const keySource = (type === 'DELETE' ? oldColumns : newColumns) as Wal2JsonColumn[];
    const keyValues = primaryKey.map((key) => {
      const value = keySource.find((column) => column.name === key.name)?.value;
      return value === null || value === undefined ? '' : String(value);
    });
    return {
      table,
      type,
      commitTimestamp: commitTimestamp(raw.timestamp),
      columns: columnTypes,
      record,
      oldRecord,
      primaryKey,
      keyValues,
      recordBytes: record ? Buffer.byteLength(JSON.stringify(record)) : 0,
    };
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
