// The captures listing: filters, search and keyset paging through the search RPCs
// (`entries_filtered_list` / `entries_filtered_count`, and `inspect_entries` when a method,
// status class or time window is set: the only RPC that takes them, and not with a workspace). Both list newest first and
// page by `before_id`, so page N costs what page 1 costs (docs/data-model.md, 1M rows).
import type { SupabaseClient } from '@supabase/supabase-js';
import { type CaptureSummary, SUMMARY_COLUMNS } from './capture-types.ts';

export type CaptureFilters = {
  device: string;
  host: string;
  method: string;
  statusClass: string;
  from: string;
  to: string;
  search: string;
  workspace: string;
};

export const EMPTY_FILTERS: CaptureFilters = {
  device: '',
  host: '',
  method: '',
  statusClass: '',
  from: '',
  to: '',
  search: '',
  workspace: '',
};

export const PAGE_SIZE = 50;

/**
 * The filters the list can apply, which the count and the live tail then use too. A workspace is
 * listed by `entries_filtered_list` only, which takes no method, status class or time window; so
 * with a workspace those are dropped everywhere (the page disables them and says so), rather than
 * counted but not listed.
 */
export function applicableFilters(filters: CaptureFilters): CaptureFilters {
  if (!filters.workspace) return filters;
  return { ...filters, method: '', statusClass: '', from: '', to: '' };
}

function needsInspect(filters: CaptureFilters): boolean {
  return !!(filters.method || filters.statusClass || filters.from || filters.to);
}

function common(filters: CaptureFilters) {
  return {
    device_uuids: filters.device ? [filters.device] : null,
    hosts: filters.host.trim() ? [filters.host.trim().toLowerCase()] : null,
    search_q: filters.search.trim() || null,
  };
}

export async function listCaptures(
  supabase: SupabaseClient,
  requested: CaptureFilters,
  beforeId: number | null,
): Promise<CaptureSummary[]> {
  const filters = applicableFilters(requested);
  if (needsInspect(filters)) {
    const { data, error } = await supabase.rpc('inspect_entries', {
      ...common(filters),
      methods: filters.method ? [filters.method] : null,
      status_classes: filters.statusClass ? [Number(filters.statusClass)] : null,
      from_ts: filters.from ? new Date(filters.from).toISOString() : null,
      to_ts: filters.to ? new Date(filters.to).toISOString() : null,
      before_id: beforeId,
      lim: PAGE_SIZE,
    });
    if (error) throw new Error(error.message);
    return (data ?? []) as CaptureSummary[];
  }
  const { data, error } = await supabase
    .rpc('entries_filtered_list', {
      ...common(filters),
      target_workspace: filters.workspace || null,
      before_id: beforeId,
      lim: PAGE_SIZE,
    })
    .select(SUMMARY_COLUMNS);
  if (error) throw new Error(error.message);
  return (data ?? []) as unknown as CaptureSummary[];
}

export type CaptureCount = { count: number; exact: boolean };

/**
 * How many captures match, from `entries_count`: exact up to 1000, above that an
 * estimate flagged `exact: false` (under 50 ms at 1M rows); `exact` asks for the full count,
 * which `entries_filtered_count` also gives but slower for common terms (docs/data-model.md).
 */
export async function countCaptures(
  supabase: SupabaseClient,
  requested: CaptureFilters,
  exact = false,
): Promise<CaptureCount> {
  const filters = applicableFilters(requested);
  const { data, error } = await supabase.rpc('entries_count', {
    ...common(filters),
    target_workspace: filters.workspace || null,
    methods: filters.method ? [filters.method] : null,
    status_classes: filters.statusClass ? [Number(filters.statusClass)] : null,
    from_ts: filters.from ? new Date(filters.from).toISOString() : null,
    to_ts: filters.to ? new Date(filters.to).toISOString() : null,
    exact,
  });
  if (error) throw new Error(error.message);
  const answer = data as { count?: unknown; exact?: unknown };
  return { count: Number(answer.count), exact: answer.exact === true };
}

/** Whether a live capture belongs in the list under the current filters. */
export function matchesFilters(row: CaptureSummary, filters: CaptureFilters): boolean {
  if (filters.workspace) return false; // a new capture is in no workspace yet
  if (filters.device && row.device_uuid !== filters.device) return false;
  if (filters.host.trim() && row.host?.toLowerCase() !== filters.host.trim().toLowerCase())
    return false;
  if (filters.method && row.method !== filters.method) return false;
  if (
    filters.statusClass &&
    String(Math.floor((row.status_code ?? 0) / 100)) !== filters.statusClass
  )
    return false;
  if (filters.to) return false; // a window that ends is not live
  const term = filters.search.trim().toLowerCase();
  if (term && !`${row.host ?? ''} ${row.url ?? ''}`.toLowerCase().includes(term)) return false;
  return true;
}

/** Newest first, no duplicates (a page read and an arrival may overlap), at most `limit`. */
export function mergeNewest(
  current: CaptureSummary[],
  arrivals: CaptureSummary[],
  limit: number,
): CaptureSummary[] {
  const seen = new Set(current.map((row) => row.id));
  const fresh = arrivals.filter((row) => !seen.has(row.id)).sort((a, b) => b.id - a.id);
  return [...fresh, ...current].slice(0, limit);
}
