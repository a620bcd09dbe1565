// One joined channel of one socket: its topic, the identity it acts as, and its postgres_changes
// bindings. Shared by the socket session (which fills it) and the dispatcher (which reads it).
import type { TableRef } from './catalog.ts';
import type { ChangeType } from './change.ts';
import type { ColumnFilter } from './filters.ts';
import type { UserBroadcast } from './protocol.ts';
import type { Claims } from './tokens.ts';

export interface PostgresBinding {
  /** The integer the client matches in `payload.ids`. */
  id: number;
  event: '*' | ChangeType;
  filters: ColumnFilter[];
  /** Published tables the binding covers ('*' bindings cover several). */
  tables: TableRef[];
}

/** How the dispatcher and other sockets reach the socket a member belongs to. */
export interface MemberOutbox {
  sendFrame(topic: string, joinRef: string | null, event: string, payload: object): void;
  /** As sendFrame, with the payload already encoded as JSON (shared by many sockets). */
  sendEncodedFrame(topic: string, joinRef: string | null, event: string, payloadJson: string): void;
  sendBroadcast(member: ChannelMember, broadcast: UserBroadcast): void;
  /** Closes the member's channel with a `system` error first (as on token expiry). */
  closeChannel(member: ChannelMember, message: string): void;
}

export interface ChannelMember {
  outbox: MemberOutbox;
  topic: string;
  joinRef: string | null;
  token: string | null;
  claims: Claims;
  identity: string;
  bindings: PostgresBinding[];
  broadcastSelf: boolean;
  broadcastAck: boolean;
  expiryTimer: NodeJS.Timeout | null;
}
