// A committed row change as the service delivers it: read from the slot (wal-stream.ts), matched
// against subscriptions (dispatcher.ts) and checked for revocations (credentials.ts).
import type { TableRef } from './catalog.ts';

export type ChangeType = 'INSERT' | 'UPDATE' | 'DELETE';

export interface ChangeColumn {
  name: string;
  type: string;
  /** format_type() of the column, for casts in visibility queries. */
  sqlType: string;
}

export interface Change {
  /** The table subscribers name (a partition's root). */
  table: TableRef;
  type: ChangeType;
  commitTimestamp: string;
  columns: ChangeColumn[];
  record: Record<string, unknown> | null;
  oldRecord: Record<string, unknown> | null;
  primaryKey: ChangeColumn[];
  /** Primary-key values as text, in primaryKey order (for visibility checks). */
  keyValues: string[];
  /** JSON size of the record, to apply the 1 MB limit. */
  recordBytes: number;
}
