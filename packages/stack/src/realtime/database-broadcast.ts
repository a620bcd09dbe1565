// Broadcast from the database (docs/realtime.md "Broadcast from the database"): a row inserted into
// realtime.messages (realtime.send(), realtime.broadcast_changes(), or an INSERT an RLS policy
// allows) reaches the channels of its topic as a broadcast event, as upstream's
// ReplicationConnection relays it. Here the rows come from the service's own wal2json slot, in
// commit order with the postgres_changes it carries; the messages are deleted after 72 hours.
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Change } from './change.ts';
import { type ChannelMember, readsBroadcast, roomOf } from './channel-member.ts';

/** What the slot reads besides the publication: every table of schema realtime (its partitions). */
export const MESSAGE_TABLES = ['realtime.*'] as const;

/** Upstream's retention (Realtime.Messages.delete_old_messages): 72 hours. */
const RETENTION = '72 hours';
const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

export interface DatabaseBroadcast {
  id: string | null;
  /** The topic as the client names it (realtime.topic()), without `realtime:`. */
  topic: string;
  event: string;
  payload: unknown;
  private: boolean;
}

/** The broadcast a committed change carries: an INSERT into realtime.messages with a payload. */
export function databaseBroadcastOf(change: Change): DatabaseBroadcast | null {
  const { schema, table } = change.table;
  if (schema !== 'realtime' || table !== 'messages' || change.type !== 'INSERT') return null;
  const record = change.record ?? {};
  const { topic, event, payload, id } = record;
  // Upstream skips rows without these (get_or_error in replication_connection.ex).
  if (typeof topic !== 'string' || typeof event !== 'string' || payload === null) return null;
  if (payload === undefined) return null;
  return {
    id: typeof id === 'string' ? id : null,
    topic,
    event,
    payload,
    private: record.private === true,
  };
}

/**
 * Sends the broadcast to the members of its room that may read broadcasts, as upstream's
 * BatchBroadcast: `{type, event, payload, meta: {id}}` under the event `broadcast`.
 */
export function deliverDatabaseBroadcast(
  message: DatabaseBroadcast,
  membersOf: (room: string) => Iterable<ChannelMember>,
): void {
  const payload = JSON.stringify({
    type: 'broadcast',
    event: message.event,
    payload: message.payload,
    ...(message.id ? { meta: { id: message.id } } : {}),
  });
  for (const member of membersOf(roomOf(`realtime:${message.topic}`, message.private))) {
    if (!readsBroadcast(member)) continue;
    member.outbox.sendEncodedFrame(member.topic, member.joinRef, 'broadcast', payload);
  }
}

/** Deletes messages past the retention now and every hour; returns the function that stops it. */
export function sweepOldMessages(pool: Pool, logger: Logger): () => void {
  const sweep = () => {
    pool
      .query(`delete from realtime.messages where inserted_at < now() - interval '${RETENTION}'`)
      .catch((error: unknown) => logger.warn({ err: error }, 'realtime messages sweep failed'));
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
