// Fans a batch of database changes out to the channel members whose bindings, RLS and filters
// let them see it, in commit order (issue: Realtime, "Changes and RLS"). The RLS check runs once
// per distinct identity and table per batch; payloads are built once per role.
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from './catalog.ts';
import type { ChannelMember, PostgresBinding } from './channel-member.ts';
import { matchesFilters } from './filters.ts';
import { answerVisibility } from './visibility.ts';
import type { Change } from './wal-stream.ts';

/** Realtime's max_record_bytes: a larger record is replaced by the 413 form. */
const MAX_RECORD_BYTES = 1024 * 1024;
/** In the 413 form only fields this small are kept. */
const MAX_KEPT_FIELD_BYTES = 64;

interface Candidate {
  member: ChannelMember;
  binding: PostgresBinding;
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

  async dispatch(changes: Change[], members: Iterable<ChannelMember>): Promise<void> {
    const subscribed = [...members].filter((member) => member.bindings.length > 0);
    if (subscribed.length === 0 || changes.length === 0) return;
    const candidates = changes.map((change) =>
      subscribed.flatMap((member) =>
        member.bindings
          .filter((binding) => bindingCovers(binding, change))
          .map((binding) => ({ member, binding })),
      ),
    );
    const visible = await this.checkVisibility(changes, candidates);

    for (const [index, change] of changes.entries()) {
      const payloads = new Map<string, object | null>();
      const idsByMember = new Map<ChannelMember, number[]>();
      for (const { member, binding } of candidates[index] as Candidate[]) {
        const gate = visible.get(`${member.identity}|${index}`);
        if (gate === false) continue;
        const columns = await this.catalog.selectableColumns(member.claims.role, change.table);
        if (!change.primaryKey.every((key) => columns.has(key.name))) continue;
        const filterRecord = change.record ?? change.oldRecord ?? {};
        const typeOf = (name: string) =>
          change.columns.find((column) => column.name === name)?.type;
        if (!matchesFilters(binding.filters, filterRecord, typeOf)) continue;
        const ids = idsByMember.get(member) ?? [];
        ids.push(binding.id);
        idsByMember.set(member, ids);
      }
      for (const [member, ids] of idsByMember) {
        const role = member.claims.role;
        if (!payloads.has(role)) payloads.set(role, await this.payloadFor(change, role));
        member.outbox.sendFrame(member.topic, member.joinRef, 'postgres_changes', {
          ids,
          data: payloads.get(role),
        });
      }
    }
  }

  /**
   * Runs the RLS existence checks an INSERT or UPDATE on an RLS table needs. Returns, per
   * `identity|changeIndex`, whether that identity sees the row; absent means no check applies.
   */
  private async checkVisibility(
    changes: Change[],
    candidates: Candidate[][],
  ): Promise<Map<string, boolean>> {
    const groups = new Map<string, { member: ChannelMember; table: string; indexes: number[] }>();
    for (const [index, change] of changes.entries()) {
      if (change.type === 'DELETE') continue; // Realtime sends a DELETE's key without a check.
      if (!(await this.catalog.hasRls(change.table))) continue;
      for (const { member } of candidates[index] as Candidate[]) {
        const key = `${member.identity}|${change.table.schema}.${change.table.table}`;
        const group = groups.get(key) ?? { member, table: key, indexes: [] };
        if (!group.indexes.includes(index)) group.indexes.push(index);
        groups.set(key, group);
      }
    }
    const result = new Map<string, boolean>();
    const list = [...groups.values()];
    // Round trips in flight at once: one per pool connection the dispatcher may use.
    const lanes = 4;
    const perLane = Math.ceil(list.length / lanes);
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        const slice = list.slice(lane * perLane, (lane + 1) * perLane);
        if (slice.length === 0) return;
        const answers = await answerVisibility(
          this.pool,
          slice.map((group) => {
            const first = changes[group.indexes[0] as number] as Change;
            return {
              identity: { role: group.member.claims.role, claims: group.member.claims },
              table: first.table,
              primaryKey: first.primaryKey,
              keys: group.indexes.map((index) => (changes[index] as Change).keyValues),
            };
          }),
          (error) => this.logger.warn({ err: error }, 'realtime visibility check failed'),
        );
        slice.forEach((group, position) => {
          group.indexes.forEach((changeIndex, keyPosition) => {
            result.set(
              `${group.member.identity}|${changeIndex}`,
              answers[position]?.has(keyPosition) ?? false,
            );
          });
        });
      }),
    );
    return result;
  }

  private async payloadFor(change: Change, role: string): Promise<object> {
    const selectable = await this.catalog.selectableColumns(role, change.table);
    const rls = await this.catalog.hasRls(change.table);
    let record = pick(change.record, selectable);
    let oldRecord = pick(change.oldRecord, selectable);
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
