// Read once, then Realtime (002 §4.1–4.2: "read once over REST on connect and let Realtime keep
// the value fresh"): no polling anywhere in the console. Each hook owns one channel and removes it
// on unmount, so a page left behind stops receiving.
import type { RealtimePostgresChangesPayload, SupabaseClient } from '@supabase/supabase-js';
import { useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';

export type ChannelState = 'connecting' | 'live' | 'failed';

type ChangeEvent = 'INSERT' | 'UPDATE' | 'DELETE' | '*';

let channelCounter = 0;

/**
 * Subscribes `onChange` to postgres_changes of one table (optionally filtered) on a channel named
 * `topic`; returns the unsubscribe. RLS decides what arrives (docs/realtime.md): a role without
 * the capability gets nothing and no error.
 */
export function subscribeTable<Row extends Record<string, unknown>>(
  supabase: SupabaseClient,
  options: { topic: string; table: string; event?: ChangeEvent; filter?: string },
  onChange: (change: RealtimePostgresChangesPayload<Row>) => void,
  onState: (state: ChannelState) => void,
): () => void {
  channelCounter += 1;
  // A page may subscribe to the same topic twice (StrictMode, two panels): unique channel names.
  const channel = supabase.channel(`${options.topic}#${channelCounter}`);
  channel.on(
    // biome-ignore lint/suspicious/noExplicitAny: realtime-js overloads need a literal event type
    'postgres_changes' as any,
    {
      event: options.event ?? '*',
      schema: 'public',
      table: options.table,
      ...(options.filter ? { filter: options.filter } : {}),
    },
    onChange,
  );
  channel.subscribe((status) => {
    if (status === 'SUBSCRIBED') onState('live');
    else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') onState('failed');
  });
  return () => {
    void supabase.removeChannel(channel);
  };
}

export type SnapshotRow<T> = { snapshot: T; updated_at: string };

export type SnapshotState<T> =
  | { status: 'loading' }
  | { status: 'absent' }
  | { status: 'error'; message: string }
  | { status: 'ready'; row: SnapshotRow<T>; channel: ChannelState };

/**
 * One snapshot row (`service_stats` or `service_status`, id 1): REST once, then every UPDATE
 * (and the first INSERT) over Realtime. `absent` is REST's `[]`: the row is not written yet or
 * the capability is missing (002 §7).
 */
export function useSnapshotRow<T>(table: 'service_stats' | 'service_status'): SnapshotState<T> {
  const { supabase } = useAppServices();
  const [state, setState] = useState<SnapshotState<T>>({ status: 'loading' });
  useEffect(() => {
    let current = true;
    let channel: ChannelState = 'connecting';
    let latest: SnapshotRow<T> | null = null;
    const publish = () => {
      if (current && latest) setState({ status: 'ready', row: latest, channel });
    };
    // Subscribe first, then read: a change between the two is not lost (the newer wins).
    const unsubscribe = subscribeTable<SnapshotRow<T> & { id: number }>(
      supabase,
      { topic: table, table, filter: 'id=eq.1' },
      (change) => {
        const row = change.new as Partial<SnapshotRow<T>>;
        if (!row?.snapshot || !row.updated_at) return;
        // Realtime delivers in commit order, so each event is the newest row.
        latest = { snapshot: row.snapshot, updated_at: row.updated_at };
        publish();
      },
      (next) => {
        channel = next;
        publish();
      },
    );
    void supabase
      .from(table)
      .select('snapshot,updated_at')
      .eq('id', 1)
      .then(({ data, error }) => {
        if (!current) return;
        if (error) {
          setState({ status: 'error', message: error.message });
          return;
        }
        const row = (data?.[0] ?? null) as SnapshotRow<T> | null;
        // An event that arrived while this read was in flight is newer than the read.
        if (row && !latest) latest = row;
        if (latest) publish();
        else setState({ status: 'absent' });
      });
    return () => {
      current = false;
      unsubscribe();
    };
  }, [supabase, table]);
  return state;
}

/** The current time, ticking every `ms`: for staleness and "seen N s ago" only, no fetching. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(timer);
  }, [ms]);
  return now;
}
