// The postgres_changes bindings of a join, checked as Supabase Realtime checks them
// (docs/realtime.md "Protocol", Join): a known event, a published table, a filter that parses and
// names columns the subscriber's role may read. Returns the bindings or the join's error reason.
import type { Catalog, TableRef } from './catalog.ts';
import type { ChangeType } from './change.ts';
import type { PostgresBinding } from './channel-member.ts';
import { FilterError, parseFilters } from './filters.ts';

export interface BindingRequest {
  event?: unknown;
  schema?: unknown;
  table?: unknown;
  filter?: unknown;
}

const EVENTS = new Set(['*', 'INSERT', 'UPDATE', 'DELETE']);

export async function resolveBindings(
  requests: BindingRequest[],
  role: string,
  catalog: Catalog,
  nextBindingId: () => number,
): Promise<PostgresBinding[] | string> {
  const bindings: PostgresBinding[] = [];
  for (const request of requests) {
    const event = typeof request.event === 'string' ? request.event.toUpperCase() : '';
    const schema = typeof request.schema === 'string' ? request.schema : '';
    const table = typeof request.table === 'string' && request.table ? request.table : undefined;
    const filter = typeof request.filter === 'string' ? request.filter : undefined;
    const described = `[event: ${request.event}, schema: ${schema}, table: ${table ?? '*'}, filters: [${filter ?? ''}]]`;
    if (!EVENTS.has(event) || !schema) {
      return `Unable to subscribe to changes with given parameters. Please check Realtime is enabled for the given connect parameters: ${described}`;
    }
    let filters: PostgresBinding['filters'];
    try {
      filters = parseFilters(filter);
    } catch (error) {
      if (error instanceof FilterError) return `Error parsing \`filter\` params: ${error.message}`;
      throw error;
    }
    const tables = await catalog.publishedTablesMatching(schema, table);
    if (tables.length === 0) {
      return `Unable to subscribe to changes with given parameters. Please check Realtime is enabled for the given connect parameters: ${described}`;
    }
    if (table && table !== '*') {
      const columns = await catalog.columnsOf(tables[0] as TableRef);
      const unknown = filters.find((candidate) => !columns.has(candidate.column));
      if (unknown) {
        return `Error parsing \`filter\` params: column "${unknown.column}" does not exist in ${schema}.${table}`;
      }
      // A filter on a column the role may not read would tell the subscriber its values.
      const readable = await catalog.selectableColumns(role, tables[0] as TableRef);
      const hidden = filters.find((candidate) => !readable.has(candidate.column));
      if (hidden) {
        return `Error parsing \`filter\` params: column "${hidden.column}" of ${schema}.${table} is not readable by role ${role}`;
      }
    }
    bindings.push({ id: nextBindingId(), event: event as '*' | ChangeType, filters, tables });
  }
  return bindings;
}
