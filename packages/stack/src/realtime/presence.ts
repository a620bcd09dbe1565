// Presence as Supabase Realtime serves it through Phoenix.Presence (docs/realtime.md "Presence"):
// in each room a member that tracks holds one meta under its presence key, stamped with a unique
// phx_ref; a joiner gets the room's presence_state, and every change goes to the room's readers as
// presence_diff {joins, leaves}. The state lives in this process only: one service instance.
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { ChannelMember } from './channel-member.ts';

export interface PresenceMeta {
  [field: string]: unknown;
  phx_ref: string;
  phx_ref_prev?: string;
}

/** Phoenix.Presence's wire shape: per key, the metas of everyone tracked under it. */
export type PresenceState = Record<string, { metas: PresenceMeta[] }>;

interface Tracked {
  key: string;
  payload: Record<string, unknown>;
  meta: PresenceMeta;
}

/** A Phoenix.Tracker ref stands for one track; only its uniqueness matters to clients. */
function newRef(): string {
  return randomBytes(12).toString('base64url');
}

function stateOf(entries: Iterable<Tracked>): PresenceState {
  const state: PresenceState = {};
  for (const { key, meta } of entries) {
    const metas = state[key]?.metas ?? [];
    metas.push(meta);
    state[key] = { metas };
  }
  return state;
}

export class PresenceHub {
  /** Per room, what each member tracks; insertion order is the order metas are listed in. */
  private readonly rooms = new Map<string, Map<ChannelMember, Tracked>>();
  private readonly readersOf: (room: string) => Iterable<ChannelMember>;

  /** `readersOf(room)`: the members a room's presence_diff goes to. */
  constructor(readersOf: (room: string) => Iterable<ChannelMember>) {
    this.readersOf = readersOf;
  }

  /** The room's presence_state: what a joiner (or a member that just enabled presence) gets. */
  stateOf(room: string): PresenceState {
    return stateOf(this.rooms.get(room)?.values() ?? []);
  }

  /**
   * Tracks `payload` for the member under its key. As upstream: the same payload again changes
   * nothing; a new one replaces the meta (new phx_ref, phx_ref_prev the old one), which the room
   * sees as a join of the new meta and a leave of the old.
   */
  track(member: ChannelMember, payload: Record<string, unknown>): void {
    const room = this.rooms.get(member.room) ?? new Map<ChannelMember, Tracked>();
    this.rooms.set(member.room, room);
    const previous = room.get(member);
    if (previous && isDeepStrictEqual(previous.payload, payload)) return;
    const meta: PresenceMeta = { ...payload, phx_ref: newRef() };
    if (previous) meta.phx_ref_prev = previous.meta.phx_ref;
    const key = member.presence.key;
    room.set(member, { key, payload, meta });
    this.broadcastDiff(member.room, {
      joins: { [key]: { metas: [meta] } },
      leaves: previous ? { [previous.key]: { metas: [previous.meta] } } : {},
    });
  }

  /** Removes what the member tracks (untrack, leave, disconnect); nothing if it tracks nothing. */
  untrack(member: ChannelMember): void {
    const room = this.rooms.get(member.room);
    const tracked = room?.get(member);
    if (!room || !tracked) return;
    room.delete(member);
    if (room.size === 0) this.rooms.delete(member.room);
    this.broadcastDiff(member.room, {
      joins: {},
      leaves: { [tracked.key]: { metas: [tracked.meta] } },
    });
  }

  private broadcastDiff(room: string, diff: { joins: PresenceState; leaves: PresenceState }): void {
    const payload = JSON.stringify(diff);
    for (const reader of this.readersOf(room)) {
      reader.outbox.sendEncodedFrame(reader.topic, reader.joinRef, 'presence_diff', payload);
    }
  }
}
