// One joined channel of one socket: its topic, the identity it acts as, its postgres_changes
// bindings, what its private channel's policies allow and its presence settings. Shared by the
// socket session (which fills it), the dispatcher and the presence hub (which read it).
import type { ChannelPolicies } from './authorization.ts';
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

/** How a member takes part in presence (docs/realtime.md "Presence"). */
export interface PresenceSettings {
  /** `config.presence.key`, or a generated one as upstream's (a UUID). */
  key: string;
  /** It receives presence_state and presence_diff: asked for at join, or turned on by a track. */
  enabled: boolean;
  /** Presence pushes in the current rate-limit window, and when that window began. */
  calls: number;
  windowStart: number;
}

export interface ChannelMember {
  outbox: MemberOutbox;
  topic: string;
  /** `config.private`: authorized by RLS on realtime.messages, and a room apart from the public one. */
  private: boolean;
  /** The topic with its visibility (roomOf): who hears this member's broadcasts and presence. */
  room: string;
  /** What realtime.messages' policies allow on a private channel; null on a public one. */
  policies: ChannelPolicies | null;
  presence: PresenceSettings;
  joinRef: string | null;
  token: string | null;
  claims: Claims;
  identity: string;
  bindings: PostgresBinding[];
  broadcastSelf: boolean;
  broadcastAck: boolean;
  expiryTimer: NodeJS.Timeout | null;
}

/**
 * Upstream keeps public and private channels of one name apart (Tenants.tenant_topic): a broadcast
 * or a presence on one never reaches the other.
 */
export function roomOf(topic: string, isPrivate: boolean): string {
  return `${isPrivate ? 'private' : 'public'}|${topic}`;
}

/** Broadcasts reach a public member always, a private one only with broadcast read. */
export function readsBroadcast(member: ChannelMember): boolean {
  return !member.private || member.policies?.broadcast.read === true;
}

/** Presence reaches a member that enabled it and, on a private channel, may read it. */
export function readsPresence(member: ChannelMember): boolean {
  return member.presence.enabled && (!member.private || member.policies?.presence.read === true);
}
