// Fans a batch of database changes out to the channel members whose bindings, filters and RLS
// let them see it, in commit order (docs/realtime.md "Changes and RLS"). Filters are applied
// first, so only identities that would receive a change are checked; the RLS check runs once
// per distinct identity and table per batch, all identities in one statement per connection
// (visibility.ts); payloads are built and encoded once per role.
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from './catalog.ts';
import type { Change } from './change.ts';
import type { ChannelMember, PostgresBinding } from './channel-member.ts';
import { matchesFilters } from './filters.ts';
import type { Claims } from './tokens.ts';
import { answerVisibility, type Identity, type VisibilityCheck } from './visibility.ts';

/** Realtime's max_record_bytes: a larger record is replaced by the 413 form. */
const MAX_RECORD_BYTES = 1024 * 1024;
/** In the 413 form only fields this small are kept. */
const MAX_KEPT_FIELD_BYTES = 64;
/** Statements in flight at once for one batch's checks: Postgres then uses every core. */
const LANES = 4;
/** Fewer identities than this per statement cost more in round trips than they save. */
const MIN_IDENTITIES_PER_STATEMENT = 25;

/**
 * A binding that covers a change, with the member's identity as it was when the batch began: a
 * token switched mid-batch must not pair one identity's check with another's delivery.
 */
interface Candidate {
  member: ChannelMember;
  binding: PostgresBinding;
  identity: string;
  claims: Claims;
}

/** One table's check in a batch: its changes' keys and the identities that could see them. */
interface CheckGroup {
  check: VisibilityCheck;
  /** The batch index of each key in `check.keys`. */
  indexes: number[];
  identities: Map<string, Identity>;
}

function bindingCovers(binding: PostgresBinding, change: Change): boolean {
  return (
    (binding.event === '*' || binding.event === change.type) &&
    binding.tables.some(
      (table) => table.schema === change.table.schema && table.table === change.table.table,
    )
  );
}

function pick(record: Record<string, unknown> | null, columns: Set<string>) {
  if (!record) return null;
  return Object.fromEntries(Object.entries(record).filter(([name]) => columns.has(name)));
}

function tooLargeForm(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record).filter(
      ([, value]) => Buffer.byteLength(JSON.stringify(value) ?? '') <= MAX_KEPT_FIELD_BYTES,
    ),
  );
}

export class Dispatcher {
  private readonly pool: Pool;
  private readonly catalog: Catalog;
  private readonly logger: Logger;

  constructor(pool: Pool, catalog: Catalog, logger: Logger) {
    this.pool = pool;
    this.catalog = catalog;
    this.logger = logger;
  }

  /**
   * `afterEach` runs for every change once its postgres_changes frames are out, so what else a
   * change carries (a broadcast from the database) keeps its place in commit order.
   */
  async dispatch(
    changes: Change[],
    members: Iterable<ChannelMember>,
    afterEach: (change: Change) => void = () => {},
  ): Promise<void> {
    const subscribed = [...members].filter((member) => member.bindings.length > 0);
    if (subscribed.length === 0 || changes.length === 0) {
      for (const change of changes) afterEach(change);
      return;
    }
    const snapshot = new Map(
      subscribed.map((member) => [member, { identity: member.identity, claims: member.claims }]),
    );
    const candidates: Candidate[][] = [];
    for (const change of changes) {
      candidates.push(await this.candidatesFor(change, subscribed, snapshot));
    }
    const visible = await this.checkVisibility(changes, candidates);

    for (const [index, change] of changes.entries()) {
      const checked = await this.isChecked(change);
      const idsByMember = new Map<ChannelMember, { role: string; ids: number[] }>();
      for (const { member, binding, identity, claims } of candidates[index] as Candidate[]) {
        // An RLS check applies: only an explicit yes lets the row through (fail closed).
        if (checked && visible.get(`${identity}|${index}`) !== true) continue;
        const entry = idsByMember.get(member) ?? { role: claims.role, ids: [] };
        entry.ids.push(binding.id);
        idsByMember.set(member, entry);
      }
      const encoded = new Map<string, string>();
      for (const [member, { role, ids }] of idsByMember) {
        let data = encoded.get(role);
        if (data === undefined) {
          data = JSON.stringify(await this.payloadFor(change, role));
          encoded.set(role, data);
        }
        member.outbox.sendEncodedFrame(
          member.topic,
          member.joinRef,
          'postgres_changes',
          `{"ids":${JSON.stringify(ids)},"data":${data}}`,
        );
      }
      afterEach(change);
    }
  }

  /** An INSERT or UPDATE on an RLS table; Realtime sends a DELETE's key without a check. */
  private async isChecked(change: Change): Promise<boolean> {
    return change.type !== 'DELETE' && (await this.catalog.hasRls(change.table));
  }

  /**
   * The bindings a change may reach before RLS: they cover it, their role may select its key,
   * and their filters pass on what that role could be sent.
   */
  private async candidatesFor(
    change: Change,
    subscribed: ChannelMember[],
    snapshot: Map<ChannelMember, { identity: string; claims: Claims }>,
  ): Promise<Candidate[]> {
    const rls = await this.catalog.hasRls(change.table);
    const types = new Map(change.columns.map((column) => [column.name, column.type]));
    const typeOf = (name: string) => types.get(name);
    // Per role, what its members could be sent; null when the key is not selectable.
    const recordByRole = new Map<string, Record<string, unknown> | null>();
    const candidates: Candidate[] = [];
    for (const member of subscribed) {
      const { identity, claims } = snapshot.get(member) as { identity: string; claims: Claims };
      for (const binding of member.bindings) {
        if (!bindingCovers(binding, change)) continue;
        if (!recordByRole.has(claims.role)) {
          const columns = await this.catalog.selectableColumns(claims.role, change.table);
          recordByRole.set(
            claims.role,
            change.primaryKey.every((key) => columns.has(key.name))
              ? this.visibleRecord(change, columns, rls)
              : null,
          );
        }
        // Filters see only what the subscriber could be sent: their selectable columns, and
        // for a DELETE on an RLS table the key alone.
        const record = recordByRole.get(claims.role);
        if (!record || !matchesFilters(binding.filters, record, typeOf)) continue;
        candidates.push({ member, binding, identity, claims });
      }
    }
    return candidates;
  }

  private visibleRecord(change: Change, columns: Set<string>, rls: boolean) {
    const keys = new Set(change.primaryKey.map((key) => key.name));
    const source = change.record ?? change.oldRecord ?? {};
    return Object.fromEntries(
      Object.entries(source).filter(
        ([name]) => columns.has(name) && (change.type !== 'DELETE' || !rls || keys.has(name)),
      ),
    );
  }

  /**
   * Runs the RLS existence checks the batch needs. Returns, per `identity|changeIndex`, whether
   * that identity sees the row; absent means no check applies. The changes of one table form
   * one check; its identities are split over a few connections, each asking for all of its
   * identities in one statement.
   */
  private async checkVisibility(
    changes: Change[],
    candidates: Candidate[][],
  ): Promise<Map<string, boolean>> {
    const groups = new Map<string, CheckGroup>();
    for (const [index, change] of changes.entries()) {
      const covered = candidates[index] as Candidate[];
      if (covered.length === 0 || !(await this.isChecked(change))) continue;
      // The key's columns are part of the group: a batch may span a change of primary key.
      const key = JSON.stringify([
        change.table.schema,
        change.table.table,
        change.primaryKey.map((column) => [column.name, column.sqlType]),
      ]);
      const group: CheckGroup = groups.get(key) ?? {
        check: { table: change.table, primaryKey: change.primaryKey, keys: [] },
        indexes: [],
        identities: new Map(),
      };
      group.indexes.push(index);
      group.check.keys.push(change.keyValues);
      for (const { identity, claims } of covered) {
        if (!group.identities.has(identity)) {
          group.identities.set(identity, { role: claims.role, claims });
        }
      }
      groups.set(key, group);
    }
    const result = new Map<string, boolean>();
    const statements: Promise<void>[] = [];
    for (const { check, indexes, identities } of groups.values()) {
      const list = [...identities];
      const size = Math.max(MIN_IDENTITIES_PER_STATEMENT, Math.ceil(list.length / LANES));
      for (let start = 0; start < list.length; start += size) {
        const slice = list.slice(start, start + size);
        statements.push(
          answerVisibility(
            this.pool,
            check,
            slice.map(([, identity]) => identity),
            (error) => this.logger.warn({ err: error }, 'realtime visibility check failed'),
          ).then((answers) => {
            slice.forEach(([identity], position) => {
              indexes.forEach((changeIndex, keyPosition) => {
                result.set(
                  `${identity}|${changeIndex}`,
                  answers[position]?.has(keyPosition) ?? false,
                );
              });
            });
          }),
        );
      }
    }
    await Promise.all(statements);
    return result;
  }

  private async payloadFor(change: Change, role: string): Promise<object> {
    const selectable = await this.catalog.selectableColumns(role, change.table);
    const rls = await this.catalog.hasRls(change.table);
    let record = pick(change.record, selectable);
    let oldRecord = pick(change.oldRecord, selectable);
    // As Supabase Realtime's apply_rls: a DELETE on an RLS table carries the key only (no check
    // could run). An UPDATE's old_record stays whole under REPLICA IDENTITY FULL, as in Supabase
    // Realtime (docs/realtime.md "Changes and RLS", 7): whoever sees the new row also sees the
    // selectable columns it had before.
    if (change.type === 'DELETE' && rls && oldRecord) {
      const keys = new Set(change.primaryKey.map((key) => key.name));
      oldRecord = Object.fromEntries(Object.entries(oldRecord).filter(([name]) => keys.has(name)));
    }
    let errors: string[] | null = null;
    if (change.recordBytes > MAX_RECORD_BYTES && record) {
      record = tooLargeForm(record);
      errors = ['Error 413: Payload Too Large'];
    }
    return {
      schema: change.table.schema,
      table: change.table.table,
      commit_timestamp: change.commitTimestamp,
      type: change.type,
      columns: change.columns
        .filter((column) => selectable.has(column.name))
        .map((column) => ({ name: column.name, type: column.type })),
      ...(change.type === 'DELETE' ? {} : { record }),
      ...(change.type === 'INSERT' ? {} : { old_record: oldRecord ?? {} }),
      errors,
    };
  }
}
