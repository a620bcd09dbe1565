// A private Realtime topic that the database broadcasts row changes to with
// realtime.broadcast_changes() (docs/realtime.md "Private channels", "Broadcast from the
// database"): joined only if the project's policies on realtime.messages allow this user.
import type { SupabaseClient } from '@supabase/supabase-js';
import type { ChannelState } from './live.ts';

/** What realtime.broadcast_changes() sends: the row after and before the change. */
export type RowChange<Row> = {
  operation: 'INSERT' | 'UPDATE' | 'DELETE';
  table: string;
  schema: string;
  record: Row | null;
  old_record: Row | null;
};

/**
 * Joins `topic` as a private channel with the session's token and calls `onChange` for every
 * row change broadcast to it; returns the unsubscribe. A refused join (no policy allows it) is
 * reported as `failed`; `live` is reported on each (re)join, after which a page re-reads.
 */
export function subscribePrivateTopic<Row>(
  supabase: SupabaseClient,
  topic: string,
  onChange: (change: RowChange<Row>) => void,
  onState: (state: ChannelState) => void,
): () => void {
  let removed = false;
  let remove = () => {};
  // Realtime authorizes a private join by the socket's access token: hand it the session's
  // first. The channel's name is the topic itself (the policies read it as realtime.topic()),
  // so it is created only after that, by a subscriber still mounted: StrictMode's first mount
  // is gone by then and two instances never share one channel.
  void supabase.realtime.setAuth().then(
    () => {
      if (removed) return;
      const channel = supabase.channel(topic, { config: { private: true } });
      channel.on('broadcast', { event: '*' }, (message) => {
        const change = message.payload as RowChange<Row> | undefined;
        if (change?.operation) onChange(change);
      });
      channel.subscribe((status) => {
        if (status === 'SUBSCRIBED') onState('live');
        else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') onState('failed');
      });
      remove = () => void supabase.removeChannel(channel);
    },
    () => {
      if (!removed) onState('failed');
    },
  );
  return () => {
    removed = true;
    remove();
  };
}
