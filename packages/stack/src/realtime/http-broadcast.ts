// Realtime's HTTP broadcast endpoints, which realtime-js uses when a channel is not joined:
// POST /api/broadcast {messages: [{topic, event, payload, private}]} (send() falling back to
// REST) and POST /api/broadcast/<topic>/events/<event> with the payload as body (httpSend(),
// `?private=true` for a private channel). Both answer 202 and relay to the topic's room. As
// upstream's BatchBroadcast, a private message is relayed only when realtime.messages' policies
// give the caller broadcast write on its topic, and dropped silently otherwise.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChannelPolicies } from './authorization.ts';
import { type ChannelMember, readsBroadcast, roomOf } from './channel-member.ts';
import type { UserBroadcast } from './protocol.ts';
import type { Claims, TokenCheck } from './tokens.ts';

export interface BroadcastHost {
  verifyToken(token: string | null): Promise<TokenCheck>;
  authorize(topic: string, claims: Claims): Promise<ChannelPolicies>;
  membersOf(room: string): Iterable<ChannelMember>;
}

/** As the WebSocket's maxPayload. */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

function answer(response: ServerResponse, status: number, body?: object): void {
  response.writeHead(status, body ? { 'content-type': 'application/json; charset=utf-8' } : {});
  response.end(body ? JSON.stringify(body) : undefined);
}

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

interface Message {
  topic: string;
  event: string;
  payload: unknown;
  binary: boolean;
  private: boolean;
}

function parseBatch(body: Buffer): Message[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'body is not JSON';
  }
  const messages = (parsed as { messages?: unknown })?.messages;
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > 100) {
    return 'messages must be an array of 1 to 100 {topic, event, payload}';
  }
  const result: Message[] = [];
  for (const message of messages as Array<Record<string, unknown>>) {
    if (typeof message?.topic !== 'string' || typeof message.event !== 'string') {
      return 'every message needs a string topic and event';
    }
    result.push({
      topic: message.topic,
      event: message.event,
      payload: message.payload,
      binary: false,
      private: message.private === true,
    });
  }
  return result;
}

/** `path` is what follows /realtime/v1, e.g. /api/broadcast or /api/broadcast/room/events/x. */
export async function handleBroadcastRequest(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  token: string | null,
  host: BroadcastHost,
): Promise<void> {
  const url = new URL(path, 'http://realtime');
  const single = /^\/api\/broadcast\/([^/]+)\/events\/([^/]+)$/.exec(url.pathname);
  if (url.pathname !== '/api/broadcast' && !single) {
    answer(response, 404, { error: 'not found' });
    return;
  }
  if (request.method !== 'POST') {
    answer(response, 405, { error: 'use POST' });
    return;
  }
  const check = await host.verifyToken(token);
  if (!check.ok) {
    answer(response, 401, { error: check.message });
    return;
  }
  const body = await readBody(request);
  if (!body) {
    answer(response, 413, { error: `body over ${MAX_BODY_BYTES} bytes` });
    return;
  }
  let messages: Message[] | string;
  if (single) {
    const binary = request.headers['content-type'] === 'application/octet-stream';
    let payload: unknown = body;
    if (!binary) {
      try {
        payload = JSON.parse(body.toString('utf8'));
      } catch {
        payload = undefined;
      }
    }
    messages =
      payload === undefined
        ? 'body is not JSON'
        : [
            {
              topic: decodeURIComponent(single[1] as string),
              event: decodeURIComponent(single[2] as string),
              payload,
              binary,
              private: url.searchParams.get('private') === 'true',
            },
          ];
  } else {
    messages = parseBatch(body);
  }
  if (typeof messages === 'string') {
    answer(response, 400, { error: messages });
    return;
  }
  // One policy check per private topic, as the caller (service_role bypasses RLS, so it may).
  const writable = new Map<string, Promise<boolean>>();
  const mayWrite = (topic: string) => {
    let decision = writable.get(topic);
    if (!decision) {
      decision = host.authorize(topic, check.claims).then(
        (policies) => policies.broadcast.write,
        () => false,
      );
      writable.set(topic, decision);
    }
    return decision;
  };
  for (const message of messages) {
    if (message.private && !(await mayWrite(message.topic))) continue;
    const topic = `realtime:${message.topic}`;
    const broadcast: UserBroadcast = {
      joinRef: null,
      ref: null,
      topic,
      event: message.event,
      payload: message.payload,
      binary: message.binary,
      meta: null,
    };
    for (const member of host.membersOf(roomOf(topic, message.private))) {
      if (readsBroadcast(member)) member.outbox.sendBroadcast(member, broadcast);
    }
  }
  answer(response, 202);
}
