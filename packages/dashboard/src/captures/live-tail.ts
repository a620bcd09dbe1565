// The live tail: new captures over Realtime, per device on the `device:<uuid>` channel
// (postgres_changes on entries with `device_uuid=eq.<uuid>`), or every capture the caller may see
// on `entries`. RLS decides what arrives. Arrivals are batched per animation frame and the list
// is bounded, so a 200 captures/s tail keeps a flat memory and a steady frame rate.
import type { SupabaseClient } from '@supabase/supabase-js';
import { type ChannelState, subscribeTable } from '../console/live.ts';
import { type CaptureSummary, summaryFromRecord } from './capture-types.ts';

export const LIVE_LIMIT = 500;

export function subscribeLiveTail(
  supabase: SupabaseClient,
  device: string,
  onRows: (rows: CaptureSummary[]) => void,
  onState: (state: ChannelState) => void,
): () => void {
  let pending: CaptureSummary[] = [];
  let frame = 0;
  const flush = () => {
    frame = 0;
    const rows = pending;
    pending = [];
    onRows(rows);
  };
  const unsubscribe = subscribeTable<Record<string, unknown>>(
    supabase,
    device
      ? {
          topic: `device:${device}`,
          table: 'entries',
          event: 'INSERT',
          filter: `device_uuid=eq.${device}`,
        }
      : { topic: 'entries', table: 'entries', event: 'INSERT' },
    (change) => {
      const row = summaryFromRecord(change.new as Record<string, unknown>);
      if (!row) return;
      pending.push(row);
      // A hidden tab gets no animation frames: a timer keeps the list current there too.
      if (!frame)
        frame = document.hidden
          ? window.setTimeout(flush, 250)
          : window.requestAnimationFrame(flush);
    },
    onState,
  );
  return () => {
    unsubscribe();
    if (frame) {
      window.cancelAnimationFrame(frame);
      window.clearTimeout(frame);
    }
  };
}
