// One Realtime WebSocket: decodes frames, answers heartbeats, joins and leaves channels (private
// ones authorized by RLS on realtime.messages), takes access_token updates, relays broadcasts and
// handles presence pushes (reference supabase-compat §2c, docs/realtime.md). What happens to
// database changes is the dispatcher's business; this file only keeps the channel members current.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { ChannelPolicies } from './authorization.ts';
import { type BindingRequest, resolveBindings } from './bindings.ts';
import type { Catalog } from './catalog.ts';
import {
  authorizeJoin,
  isObject,
  isTrue,
  presenceSettingsOf,
  reauthorize,
  subTopicOf,
} from './channel-access.ts';
import { type ChannelMember, readsBroadcast, readsPresence, roomOf } from './channel-member.ts';
import type { PresenceHub } from './presence.ts';
import { handlePresencePush } from './presence-push.ts';
import {
  decodeBroadcastPush,
  decodeTextFrame,
  encodeTextFrame,
  encodeTextFrameWithPayload,
  encodeUserBroadcast,
  type Frame,
  ProtocolError,
  type UserBroadcast,
  type Vsn,
} from './protocol.ts';
import { type Claims, identityKey, type TokenCheck } from './tokens.ts';

export interface SessionHost {
  catalog: Catalog;
  verifyToken(token: string | null): Promise<TokenCheck>;
  /**
   * What realtime.messages' policies let `claims` do on the private channel `topic` (without
   * `realtime:`); throws AuthorizationUnavailable when the check cannot run.
   */
  authorize(topic: string, claims: Claims): Promise<ChannelPolicies>;
  presence: PresenceHub;
  register(member: ChannelMember): void;
  /** Takes the member out of its room, presence included (its metas leave). */
  unregister(member: ChannelMember): void;
  /** Re-checks a just registered or switched token, closing the channel if it no longer stands. */
  confirm(member: ChannelMember): void;
  membersOf(room: string): Iterable<ChannelMember>;
  nextBindingId(): number;
}

/** Bounds per socket, so one client cannot make the service hold or check without limit. */
export const MAX_CHANNELS_PER_SOCKET = 100;
export const MAX_BINDINGS_PER_CHANNEL = 100;
/** A client this far behind (bytes queued for it) is disconnected rather than buffered for. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** WebSocket close code 1013, "try again later": the client reconnects and rejoins. */
const CLOSE_TOO_SLOW = 1013;
/** setTimeout's ceiling; tokens living longer are re-armed when the timer fires. */
const MAX_TIMER_MS = 2_147_483_647;
export class SocketSession {
  private readonly members = new Map<string, ChannelMember>();
  private inbox: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly outbox: ChannelMember['outbox'] = {
    sendFrame: (topic, joinRef, event, payload) =>
      this.send({ joinRef, ref: null, topic, event, payload: payload as Record<string, unknown> }),
    sendEncodedFrame: (topic, joinRef, event, payloadJson) =>
      this.deliver(
        encodeTextFrameWithPayload({ joinRef, ref: null, topic, event }, payloadJson, this.vsn),
      ),
    sendBroadcast: (member, broadcast) => this.sendBroadcast(member, broadcast),
    closeChannel: (member, message) => this.closeWithError(member, message),
  };

  private readonly socket: WebSocket;
  /** The connection under `socket`, corked while a burst of frames is written. */
  private readonly transport: Duplex;
  private corked = false;
  private readonly vsn: Vsn;
  private readonly socketToken: string;
  private readonly host: SessionHost;

  constructor(
    socket: WebSocket,
    transport: Duplex,
    vsn: Vsn,
    socketToken: string,
    host: SessionHost,
  ) {
    this.socket = socket;
    this.transport = transport;
    this.vsn = vsn;
    this.socketToken = socketToken;
    this.host = host;
    // Frames are handled one after another: a join is async, and an access_token push sent
    // right behind it must find the channel joined.
    socket.on('message', (data, isBinary) => {
      this.inbox = this.inbox
        .then(() => this.receive(data as Buffer, isBinary))
        .catch(() => socket.close(1011, 'internal error'));
    });
    socket.on('close', () => {
      this.closed = true;
      for (const member of this.members.values()) this.drop(member);
    });
  }

  private send(frame: Frame): void {
    this.deliver(encodeTextFrame(frame, this.vsn));
  }

  /** Sends unless the client has fallen too far behind; then it is disconnected (1013). */
  private deliver(data: string | Buffer): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.socket.close(CLOSE_TOO_SLOW, 'client too slow');
      return;
    }
    // Frames sent in one turn of the event loop (a batch of changes fans out in one) leave in
    // one write instead of one system call each.
    if (!this.corked) {
      this.corked = true;
      this.transport.cork();
      setImmediate(() => {
        this.corked = false;
        this.transport.uncork();
      });
    }
    this.socket.send(data);
  }

  private reply(frame: Frame, status: 'ok' | 'error', response: object): void {
    this.send({
      joinRef: frame.joinRef,
      ref: frame.ref,
      topic: frame.topic,
      event: 'phx_reply',
      payload: { status, response },
    });
  }

  private sendBroadcast(member: ChannelMember, broadcast: UserBroadcast): void {
    if (this.vsn === '2.0.0') {
      this.deliver(encodeUserBroadcast({ ...broadcast, topic: member.topic }));
    } else if (!broadcast.binary) {
      this.send({
        joinRef: member.joinRef,
        ref: null,
        topic: member.topic,
        event: 'broadcast',
        payload: { type: 'broadcast', event: broadcast.event, payload: broadcast.payload },
      });
    }
  }

  private async receive(data: Buffer, isBinary: boolean): Promise<void> {
    if (this.closed) return;
    if (isBinary) {
      let broadcast: UserBroadcast;
      try {
        broadcast = decodeBroadcastPush(data);
      } catch {
        return;
      }
      this.relay(broadcast);
      return;
    }
    let frame: Frame;
    try {
      frame = decodeTextFrame(data.toString('utf8'), this.vsn);
    } catch (error) {
      if (error instanceof ProtocolError) return;
      throw error;
    }
    if (frame.topic === 'phoenix') {
      if (frame.event === 'heartbeat') this.reply(frame, 'ok', {});
      return;
    }
    if (frame.event === 'phx_join') {
      await this.join(frame);
      return;
    }
    const member = this.members.get(frame.topic);
    if (!member) {
      this.reply(frame, 'error', { reason: 'unmatched topic' });
      return;
    }
    switch (frame.event) {
      case 'phx_leave':
        this.reply(frame, 'ok', {});
        this.drop(member);
        return;
      case 'access_token':
        await this.updateToken(member, frame.payload.access_token);
        return;
      case 'presence':
        this.handlePresence(member, frame);
        return;
      case 'broadcast': {
        const { event, payload } = frame.payload;
        this.relay({
          joinRef: frame.joinRef,
          ref: frame.ref,
          topic: frame.topic,
          event: typeof event === 'string' ? event : '',
          payload,
          binary: false,
          meta: null,
        });
        return;
      }
      default:
        this.reply(frame, 'error', { reason: `${frame.event} is not supported by this stack` });
    }
  }

  private relay(broadcast: UserBroadcast): void {
    const sender = this.members.get(broadcast.topic);
    if (!sender) return;
    // Upstream's BroadcastHandler: without broadcast write on a private channel nothing is
    // relayed and nothing acknowledged (the client's ack times out).
    if (sender.private && sender.policies?.broadcast.write !== true) return;
    try {
      encodeUserBroadcast(broadcast);
    } catch (error) {
      if (error instanceof ProtocolError) return; // too long to re-encode for anyone
      throw error;
    }
    for (const member of this.host.membersOf(sender.room)) {
      if (member === sender && !sender.broadcastSelf) continue;
      if (!readsBroadcast(member)) continue;
      member.outbox.sendBroadcast(member, broadcast);
    }
    if (sender.broadcastAck && broadcast.ref) {
      this.send({
        joinRef: broadcast.joinRef,
        ref: broadcast.ref,
        topic: broadcast.topic,
        event: 'phx_reply',
        payload: { status: 'ok', response: {} },
      });
    }
  }

  private async join(frame: Frame): Promise<void> {
    const config = isObject(frame.payload.config) ? frame.payload.config : {};
    const offered = frame.payload.access_token;
    const token =
      typeof offered === 'string' && !offered.startsWith('sb_') ? offered : this.socketToken;
    const check = await this.host.verifyToken(token);
    if (!check.ok) {
      this.reply(frame, 'error', { reason: check.message });
      return;
    }
    const requests = Array.isArray(config.postgres_changes)
      ? (config.postgres_changes as BindingRequest[])
      : [];
    if (requests.length > MAX_BINDINGS_PER_CHANNEL) {
      this.reply(frame, 'error', {
        reason: `at most ${MAX_BINDINGS_PER_CHANNEL} postgres_changes bindings per channel`,
      });
      return;
    }
    if (!this.members.has(frame.topic) && this.members.size >= MAX_CHANNELS_PER_SOCKET) {
      this.reply(frame, 'error', {
        reason: `at most ${MAX_CHANNELS_PER_SOCKET} channels per connection`,
      });
      return;
    }
    const isPrivate = isTrue(config.private);
    const presence = presenceSettingsOf(config);
    let policies: ChannelPolicies | null = null;
    if (isPrivate) {
      const decision = await authorizeJoin(
        (topic, claims) => this.host.authorize(topic, claims),
        frame.topic,
        check.claims,
        presence.enabled,
      );
      if (typeof decision === 'string') {
        this.reply(frame, 'error', { reason: decision });
        return;
      }
      policies = decision;
    }
    const bindings = await resolveBindings(requests, check.claims.role, this.host.catalog, () =>
      this.host.nextBindingId(),
    );
    if (typeof bindings === 'string') {
      this.reply(frame, 'error', { reason: bindings });
      return;
    }
    // The socket may have closed while the join awaited: a member registered now would leak.
    if (this.closed) return;
    const previous = this.members.get(frame.topic);
    if (previous) this.drop(previous);
    const broadcast = isObject(config.broadcast) ? config.broadcast : {};
    const member: ChannelMember = {
      outbox: this.outbox,
      topic: frame.topic,
      private: isPrivate,
      room: roomOf(frame.topic, isPrivate),
      policies,
      presence,
      joinRef: frame.joinRef,
      token,
      claims: check.claims,
      identity: identityKey(check.claims),
      bindings,
      broadcastSelf: broadcast.self === true,
      broadcastAck: broadcast.ack === true,
      expiryTimer: null,
    };
    this.members.set(frame.topic, member);
    this.host.register(member);
    this.host.confirm(member);
    this.armExpiry(member);
    this.reply(frame, 'ok', {
      postgres_changes: requests.map((request, index) => ({
        ...request,
        id: bindings[index]?.id,
      })),
    });
    if (bindings.length > 0) {
      member.outbox.sendFrame(member.topic, member.joinRef, 'system', {
        channel: subTopicOf(frame.topic),
        extension: 'postgres_changes',
        message: 'Subscribed to PostgreSQL',
        status: 'ok',
      });
    }
    // Upstream sends the room's presence right after the join reply, even when it is empty.
    this.syncPresence(member);
  }

  private syncPresence(member: ChannelMember): void {
    if (!readsPresence(member)) return;
    member.outbox.sendFrame(
      member.topic,
      member.joinRef,
      'presence_state',
      this.host.presence.stateOf(member.room),
    );
  }

  private handlePresence(member: ChannelMember, frame: Frame): void {
    const outcome = handlePresencePush(this.host.presence, member, frame.payload);
    if ('close' in outcome) {
      this.closeWithError(member, outcome.close);
      return;
    }
    this.reply(frame, outcome.status, outcome.response);
    if (outcome.sync) this.syncPresence(member);
  }

  private async updateToken(member: ChannelMember, offered: unknown): Promise<void> {
    if (typeof offered !== 'string' || offered.startsWith('sb_') || offered === member.token) {
      return;
    }
    const check = await this.host.verifyToken(offered);
    if (!check.ok) {
      this.closeWithError(member, check.message);
      return;
    }
    if (member.private) {
      const policies = await reauthorize(
        (topic, claims) => this.host.authorize(topic, claims),
        member,
        check.claims,
      );
      // The channel may have been closed (a revocation, its expiry) while the check ran.
      if (this.members.get(member.topic) !== member) return;
      if (typeof policies === 'string') {
        this.closeWithError(member, policies);
        return;
      }
      member.policies = policies;
    }
    member.token = offered;
    member.claims = check.claims;
    member.identity = identityKey(check.claims);
    this.host.confirm(member);
    this.armExpiry(member);
  }

  /**
   * Realtime closes a channel whose token expires, with a `system` error first, worded as its
   * confirm_token does (channels_authorization.ex: "Token has expired N seconds ago").
   */
  private armExpiry(member: ChannelMember): void {
    if (member.expiryTimer) clearTimeout(member.expiryTimer);
    const remaining = (member.claims as Claims).exp * 1000 - Date.now();
    member.expiryTimer = setTimeout(
      () => {
        const exp = (member.claims as Claims).exp;
        if (exp * 1000 <= Date.now()) {
          const ago = Math.floor(Date.now() / 1000) - exp;
          this.closeWithError(member, `Token has expired ${ago} seconds ago`);
        } else {
          this.armExpiry(member);
        }
      },
      Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
    );
    member.expiryTimer.unref();
  }

  private closeWithError(member: ChannelMember, message: string): void {
    member.outbox.sendFrame(member.topic, member.joinRef, 'system', {
      channel: subTopicOf(member.topic),
      extension: 'system',
      message,
      status: 'error',
    });
    member.outbox.sendFrame(member.topic, member.joinRef, 'phx_close', {});
    this.drop(member);
  }

  private drop(member: ChannelMember): void {
    if (member.expiryTimer) clearTimeout(member.expiryTimer);
    if (this.members.get(member.topic) === member) this.members.delete(member.topic);
    this.host.unregister(member);
  }
}
