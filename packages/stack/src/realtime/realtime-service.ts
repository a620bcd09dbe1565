// The local stack's Realtime service (docs/realtime.md): the WebSocket endpoint behind the
// gateway at /realtime/v1/websocket, the wal2json change stream, the fan-out to channels, and the
// state one process holds for all sockets: the rooms, presence, the private channels' policy checks.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { authorizeChannel } from './authorization.ts';
import { Catalog } from './catalog.ts';
import type { Change } from './change.ts';
import { type ChannelMember, readsPresence } from './channel-member.ts';
import { Credentials, type Revocation, revocationOf, revokes } from './credentials.ts';
import {
  databaseBroadcastOf,
  deliverDatabaseBroadcast,
  sweepOldMessages,
} from './database-broadcast.ts';
import { Dispatcher } from './dispatcher.ts';
import { handleBroadcastRequest } from './http-broadcast.ts';
import { PresenceHub } from './presence.ts';
import type { Vsn } from './protocol.ts';
import { SocketSession } from './socket-session.ts';
import { type Claims, type TokenCheck, verifyRealtimeToken } from './tokens.ts';
import { WalStream } from './wal-stream.ts';

export interface RealtimeOptions {
  dbUrl: string;
  jwtSecret: string;
  logger: Logger;
  /** Pause between polls of the slot when the last one came back short. */
  pollIntervalMs?: number;
  /** Changes read per poll. */
  batchSize?: number;
}

export interface RealtimeService {
  /** Takes over an HTTP upgrade; `token` is the JWT the gateway derived from `apikey`. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, token: string | null): void;
  /** Plain HTTP under /realtime/v1 (`path` follows that prefix): the broadcast endpoints. */
  handleHttp(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    token: string | null,
  ): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export async function startRealtime(options: RealtimeOptions): Promise<RealtimeService> {
  const logger = options.logger.child({ component: 'realtime' });
  const pool = new pg.Pool({
    connectionString: options.dbUrl,
    max: 5,
    application_name: 'realtime',
  });
  pool.on('error', (error) => logger.warn({ err: error }, 'realtime pool connection lost'));
  const catalog = new Catalog(pool);
  const stream = new WalStream(options.dbUrl, catalog, logger);
  const dispatcher = new Dispatcher(pool, catalog, logger);
  const secret = new TextEncoder().encode(options.jwtSecret);
  const wss = new WebSocketServer({ noServer: true, maxPayload: 3 * 1024 * 1024 });
  const members = new Set<ChannelMember>();
  /** Members per room (roomOf): a topic's public and private channels are separate rooms. */
  const byRoom = new Map<string, Set<ChannelMember>>();
  const membersOf = (room: string): Iterable<ChannelMember> => byRoom.get(room) ?? [];
  const presence = new PresenceHub(function* readersOf(room) {
    for (const member of membersOf(room)) if (readsPresence(member)) yield member;
  });
  let bindingIds = 1000;
  const credentials = new Credentials(pool);

  /** JWT checks plus what Realtime adds here: a role PostgREST could use, a grant still standing. */
  async function verifyToken(token: string | null): Promise<TokenCheck> {
    const check = await verifyRealtimeToken(token, secret);
    if (!check.ok) return check;
    if (!(await catalog.isSwitchableRole(check.claims.role))) {
      return { ok: false, message: `Invalid role "${check.claims.role}" in JWT` };
    }
    const [refusal] = await credentials.refusals([check.claims]);
    return refusal ? { ok: false, message: refusal } : check;
  }

  /** Closes the channels of every member whose token no longer stands (one query for all). */
  async function recheck(candidates: ChannelMember[]): Promise<void> {
    const refusals = await credentials.refusals(candidates.map((member) => member.claims));
    candidates.forEach((member, index) => {
      const refusal = refusals[index];
      if (refusal && members.has(member)) member.outbox.closeChannel(member, refusal);
    });
  }

  function close(revocation: Revocation): void {
    for (const member of [...members]) {
      if (revokes(revocation, member.claims))
        member.outbox.closeChannel(member, revocation.message);
    }
  }

  /** A change that inserted into realtime.messages is a broadcast from the database. */
  function relayMessage(change: Change): void {
    const message = databaseBroadcastOf(change);
    if (message) deliverDatabaseBroadcast(message, membersOf);
  }

  /**
   * Dispatches a batch in commit order, closing revoked channels at the point of revocation:
   * nothing committed after it reaches them.
   */
  async function deliver(changes: Change[]): Promise<void> {
    let start = 0;
    for (const [index, change] of changes.entries()) {
      const revocation = revocationOf(change);
      if (!revocation) continue;
      await dispatcher.dispatch(changes.slice(start, index), members, relayMessage);
      close(revocation);
      start = index + 1;
    }
    await dispatcher.dispatch(start === 0 ? changes : changes.slice(start), members, relayMessage);
  }

  const host = {
    catalog,
    verifyToken,
    authorize: (topic: string, claims: Claims) =>
      authorizeChannel(pool, topic, claims, (failure) =>
        logger.warn({ topic, failure }, 'realtime.messages policy failed; denied'),
      ).catch((error: unknown) => {
        logger.warn({ err: error, topic }, 'realtime authorization check could not run');
        throw error;
      }),
    presence,
    register(member: ChannelMember) {
      members.add(member);
      const roomMembers = byRoom.get(member.room) ?? new Set();
      roomMembers.add(member);
      byRoom.set(member.room, roomMembers);
    },
    unregister(member: ChannelMember) {
      members.delete(member);
      byRoom.get(member.room)?.delete(member);
      if (byRoom.get(member.room)?.size === 0) byRoom.delete(member.room);
      // Phoenix.Tracker drops a channel's presence when the channel ends.
      presence.untrack(member);
    },
    /**
     * A member's token is checked again once it is registered (or switched): a revocation
     * committed between its verification and its registration was read from the slot while the
     * member was not yet there to close.
     */
    confirm(member: ChannelMember) {
      recheck([member]).catch((error: unknown) => {
        logger.warn({ err: error }, 'realtime token re-check failed; closing the channel');
        if (members.has(member)) member.outbox.closeChannel(member, 'Unable to verify the token');
      });
    },
    membersOf,
    nextBindingId: () => (bindingIds += 1),
  };

  // Changes committed after startRealtime returns are streamed: the slot exists by then.
  await stream.connect();
  const stopSweeping = sweepOldMessages(pool, logger);
  let stopped = false;
  const pollInterval = options.pollIntervalMs ?? 10;
  const batchSize = options.batchSize ?? 1000;
  const loop = (async () => {
    let failures = 0;
    let pending: Change[] | undefined;
    let generation = stream.generation;
    while (!stopped) {
      try {
        // A batch whose dispatch failed (catalog or pool trouble) is retried, not dropped: the
        // slot has already handed it over.
        const changes = pending ?? (await stream.poll(batchSize));
        pending = changes;
        if (stream.generation !== generation) {
          // A new slot: revocations committed while none existed were never read.
          await recheck([...members]);
          generation = stream.generation;
        }
        if (changes.length > 0) {
          logger.debug({ changes: changes.length, members: members.size }, 'realtime batch');
        }
        await deliver(changes);
        pending = undefined;
        failures = 0;
        if (changes.length < batchSize) await sleep(pollInterval);
      } catch (error) {
        if (stopped) break;
        failures += 1;
        logger.warn({ err: error, failures }, 'realtime poll failed; retrying');
        await sleep(Math.min(100 * 2 ** failures, 5_000));
      }
    }
  })();

  return {
    handleUpgrade(request, socket, head, token) {
      const url = new URL(request.url ?? '/', 'http://realtime');
      const vsn: Vsn = url.searchParams.get('vsn') === '1.0.0' ? '1.0.0' : '2.0.0';
      verifyToken(token)
        .then((check) => {
          if (!check.ok) {
            refuseUpgrade(socket, 401, check.message);
            return;
          }
          wss.handleUpgrade(request, socket, head, (ws) => {
            new SocketSession(ws, socket, vsn, token as string, host);
          });
        })
        .catch((error: unknown) => {
          logger.error({ err: error }, 'realtime upgrade failed');
          refuseUpgrade(socket, 401, 'Unable to verify the token');
        });
    },
    handleHttp(request, response, path, token) {
      return handleBroadcastRequest(request, response, path, token, host);
    },
    async stop() {
      stopped = true;
      stopSweeping();
      for (const client of wss.clients) client.terminate();
      wss.close();
      await loop;
      await stream.close();
      await pool.end().catch(() => undefined);
    },
  };
}
