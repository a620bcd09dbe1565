// What Realtime needs to know about tables, read from the catalogs and cached: publication
// membership, partition roots, type names, RLS, and which columns a role may select.
import type { Pool } from 'pg';

export const PUBLICATION = 'supabase_realtime';
/** Column privileges and RLS flags are re-read after this long, so grants take effect. */
const GRANT_CACHE_MS = 5_000;

export interface TableRef {
  schema: string;
  table: string;
}

const keyOf = (ref: TableRef) => `${ref.schema}.${ref.table}`;

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export class Catalog {
  private readonly roots = new Map<string, TableRef>();
  private readonly typeNames = new Map<number, string>();
  private readonly sqlTypeNames = new Map<number, string>();
  private readonly selectable = new Map<string, { at: number; columns: Set<string> }>();
  private readonly rls = new Map<string, { at: number; enabled: boolean }>();
  private readonly switchableRoles = new Map<string, boolean>();

  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /**
   * Published tables a binding names: `schema`/`table` may be '*'. A partitioned table counts
   * when its partitions are published.
   */
  async publishedTablesMatching(schema: string, table: string | undefined): Promise<TableRef[]> {
    const { rows } = await this.pool.query<TableRef>(
      `select distinct n.nspname as schema, c.relname as "table"
       from pg_catalog.pg_publication_tables pt
       join pg_catalog.pg_class c
         on c.oid = coalesce(pg_catalog.pg_partition_root(
              format('%I.%I', pt.schemaname, pt.tablename)::regclass),
              format('%I.%I', pt.schemaname, pt.tablename)::regclass)
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where pt.pubname = $1
         and ($2 = '*' or n.nspname = $2)
         and ($3::text is null or $3 = '*' or c.relname = $3)`,
      [PUBLICATION, schema, table ?? null],
    );
    return rows;
  }

  /** The table a change is reported under: a partition's root, otherwise itself. */
  async rootOf(ref: TableRef): Promise<TableRef> {
    const cached = this.roots.get(keyOf(ref));
    if (cached) return cached;
    const { rows } = await this.pool.query<TableRef>(
      `select n.nspname as schema, c.relname as "table"
       from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where c.oid = coalesce(pg_catalog.pg_partition_root(to_regclass($1)), to_regclass($1))`,
      [`${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`],
    );
    const root = rows[0] ?? ref;
    this.roots.set(keyOf(ref), root);
    return root;
  }

  /**
   * format_type() of an OID: the type as SQL text, identifiers quoted, safe to paste into a
   * cast. wal2json's own `type` text is not (it prints a quoted identifier without its quotes).
   */
  async sqlTypeName(oid: number): Promise<string> {
    const cached = this.sqlTypeNames.get(oid);
    if (cached) return cached;
    const { rows } = await this.pool.query<{ name: string | null }>(
      'select pg_catalog.format_type($1, null) as name',
      [oid],
    );
    const name = rows[0]?.name;
    if (!name) throw new Error(`unknown type oid ${oid}`);
    this.sqlTypeNames.set(oid, name);
    return name;
  }

  /** pg_type.typname for an OID (int8, timestamptz, jsonb …), as realtime-js expects. */
  async typeName(oid: number): Promise<string> {
    const cached = this.typeNames.get(oid);
    if (cached) return cached;
    const { rows } = await this.pool.query<{ typname: string }>(
      'select typname from pg_catalog.pg_type where oid = $1',
      [oid],
    );
    const name = rows[0]?.typname ?? 'unknown';
    this.typeNames.set(oid, name);
    return name;
  }

  async hasRls(ref: TableRef): Promise<boolean> {
    const cached = this.rls.get(keyOf(ref));
    if (cached && Date.now() - cached.at < GRANT_CACHE_MS) return cached.enabled;
    const { rows } = await this.pool.query<{ enabled: boolean }>(
      `select c.relrowsecurity as enabled from pg_catalog.pg_class c
       where c.oid = to_regclass($1)`,
      [`${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`],
    );
    const enabled = rows[0]?.enabled ?? true;
    this.rls.set(keyOf(ref), { at: Date.now(), enabled });
    return enabled;
  }

  /** Columns `role` may select (has_column_privilege), as Realtime's apply_rls computes. */
  async selectableColumns(role: string, ref: TableRef): Promise<Set<string>> {
    const key = `${role}/${keyOf(ref)}`;
    const cached = this.selectable.get(key);
    if (cached && Date.now() - cached.at < GRANT_CACHE_MS) return cached.columns;
    const { rows } = await this.pool.query<{ attname: string }>(
      `select a.attname from pg_catalog.pg_attribute a
       where a.attrelid = to_regclass($2) and a.attnum > 0 and not a.attisdropped
         and pg_catalog.has_column_privilege($1, a.attrelid, a.attnum, 'SELECT')`,
      [role, `${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`],
    );
    const columns = new Set(rows.map((row) => row.attname));
    this.selectable.set(key, { at: Date.now(), columns });
    return columns;
  }

  /** The table's column names (filters may only name these). */
  async columnsOf(ref: TableRef): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ attname: string }>(
      `select a.attname from pg_catalog.pg_attribute a
       where a.attrelid = to_regclass($1) and a.attnum > 0 and not a.attisdropped`,
      [`${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`],
    );
    return new Set(rows.map((row) => row.attname));
  }

  /** Only roles PostgREST could switch to (members of authenticator) act for a subscriber. */
  async isSwitchableRole(role: string): Promise<boolean> {
    const cached = this.switchableRoles.get(role);
    if (cached !== undefined) return cached;
    const { rows } = await this.pool.query<{ ok: boolean }>(
      `select exists (select 1 from pg_catalog.pg_roles where rolname = $1)
         and pg_catalog.pg_has_role('authenticator', $1, 'MEMBER') as ok`,
      [role],
    );
    const ok = rows[0]?.ok ?? false;
    this.switchableRoles.set(role, ok);
    return ok;
  }
}
