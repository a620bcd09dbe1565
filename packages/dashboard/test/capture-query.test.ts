// The captures list and its count get the same filters. Regression: with a workspace the list
// (entries_filtered_list, which takes no method, status or time) ignored those filters while the
// count (entries_count) applied them, so the count and the rows disagreed.
import type { SupabaseClient } from '@supabase/supabase-js';
import { describe, expect, it } from 'vitest';
import {
  applicableFilters,
  type CaptureFilters,
  countCaptures,
  EMPTY_FILTERS,
  listCaptures,
} from '../src/captures/capture-query.ts';

type Call = { name: string; args: Record<string, unknown> };

/** A supabase client that records the RPCs it is asked for and answers empty. */
function recordingClient(calls: Call[]): SupabaseClient {
  const answer = (name: string) =>
    name === 'entries_count'
      ? { data: { count: 0, exact: true }, error: null }
      : { data: [], error: null };
  return {
    rpc(name: string, args: Record<string, unknown>) {
      calls.push({ name, args });
      const result = Promise.resolve(answer(name));
      return Object.assign(result, { select: () => result });
    },
  } as unknown as SupabaseClient;
}

/** The method, status and time filters an RPC call carries (null when not applied). */
function narrowing(args: Record<string, unknown>) {
  return {
    methods: args.methods ?? null,
    status_classes: args.status_classes ?? null,
    from_ts: args.from_ts ?? null,
    to_ts: args.to_ts ?? null,
  };
}

const NARROWED: CaptureFilters = {
  ...EMPTY_FILTERS,
  method: 'POST',
  statusClass: '5',
  from: '2026-11-01T00:00',
  to: '2026-11-30T00:00',
};

describe('the captures list and count', () => {
  it('apply method, status and time to both without a workspace', async () => {
    const calls: Call[] = [];
    const client = recordingClient(calls);
    await listCaptures(client, NARROWED, null);
    await countCaptures(client, NARROWED);
    expect(calls.map((call) => call.name)).toEqual(['inspect_entries', 'entries_count']);
    expect(narrowing(calls[0]?.args ?? {})).toEqual(narrowing(calls[1]?.args ?? {}));
    expect(calls[1]?.args.methods).toEqual(['POST']);
  });

  it('apply them to neither in a workspace, whose list cannot take them', async () => {
    const calls: Call[] = [];
    const client = recordingClient(calls);
    const filters = { ...NARROWED, workspace: '3b000000-0000-4000-8000-000000000001' };
    await listCaptures(client, filters, null);
    await countCaptures(client, filters);
    expect(calls.map((call) => call.name)).toEqual(['entries_filtered_list', 'entries_count']);
    expect(narrowing(calls[1]?.args ?? {})).toEqual({
      methods: null,
      status_classes: null,
      from_ts: null,
      to_ts: null,
    });
    expect(calls[0]?.args.target_workspace).toBe(calls[1]?.args.target_workspace);
  });

  it('clears the filters a workspace cannot take, and keeps the others', () => {
    const filters = { ...NARROWED, workspace: 'w', host: 'a.example', search: 'x', device: 'd' };
    expect(applicableFilters(filters)).toEqual({
      ...EMPTY_FILTERS,
      workspace: 'w',
      host: 'a.example',
      search: 'x',
      device: 'd',
    });
    expect(applicableFilters(NARROWED)).toEqual(NARROWED);
  });
});
