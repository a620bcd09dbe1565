// Realtime's HTTP broadcast endpoints, which realtime-js uses when a channel is not joined:
// POST /api/broadcast {messages: [{topic, event, payload, private}]} (send() falling back to
// REST) and POST /api/broadcast/<topic>/events/<event> with the payload as body (httpSend()).
// Both answer 202 and relay to the topic's members; private channels are not served.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChannelMember } from './channel-member.ts';
import type { UserBroadcast } from './protocol.ts';
import type { TokenCheck } from './tokens.ts';

export interface BroadcastHost {
  verifyToken(token: string | null): Promise<TokenCheck>;
  membersOf(topic: string): Iterable<ChannelMember>;
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
    if (message.private === true) return 'private channels are not supported by this stack';
    result.push({
      topic: message.topic,
      event: message.event,
      payload: message.payload,
      binary: false,
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
    if (url.searchParams.get('private') === 'true') {
      messages = 'private channels are not supported by this stack';
    } else {
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
              },
            ];
    }
  } else {
    messages = parseBatch(body);
  }
  if (typeof messages === 'string') {
    answer(response, 400, { error: messages });
    return;
  }
  for (const message of messages) {
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
    for (const member of host.membersOf(topic)) member.outbox.sendBroadcast(member, broadcast);
  }
  answer(response, 202);
}
