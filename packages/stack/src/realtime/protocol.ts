// Phoenix channel frames as Supabase Realtime speaks them (reference supabase-compat §2c):
// vsn 2.0.0 text frames are arrays [join_ref, ref, topic, event, payload], vsn 1.0.0 frames are
// objects; user broadcasts also travel as realtime-js's binary frames (kinds 3 and 4).
// Parsing only: no I/O here.

export type Vsn = '1.0.0' | '2.0.0';

export interface Frame {
  joinRef: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: Record<string, unknown>;
}

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

const KIND_USER_BROADCAST_PUSH = 3;
const KIND_USER_BROADCAST = 4;
const ENCODING_BINARY = 0;
const ENCODING_JSON = 1;

function asObject(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

const refOf = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);

export function decodeTextFrame(text: string, vsn: Vsn): Frame {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProtocolError('frame is not JSON');
  }
  if (vsn === '2.0.0') {
    if (!Array.isArray(parsed) || parsed.length !== 5) {
      throw new ProtocolError('a vsn 2.0.0 frame is [join_ref, ref, topic, event, payload]');
    }
    const [joinRef, ref, topic, event, payload] = parsed as unknown[];
    if (typeof topic !== 'string' || typeof event !== 'string') {
      throw new ProtocolError('topic and event must be strings');
    }
    return { joinRef: refOf(joinRef), ref: refOf(ref), topic, event, payload: asObject(payload) };
  }
  const object = asObject(parsed);
  if (typeof object.topic !== 'string' || typeof object.event !== 'string') {
    throw new ProtocolError('a vsn 1.0.0 frame is {topic, event, payload, ref}');
  }
  return {
    joinRef: refOf(object.join_ref),
    ref: refOf(object.ref),
    topic: object.topic,
    event: object.event,
    payload: asObject(object.payload),
  };
}

export function encodeTextFrame(frame: Frame, vsn: Vsn): string {
  return encodeTextFrameWithPayload(frame, JSON.stringify(frame.payload), vsn);
}

/**
 * A frame around a payload that is already JSON text, so a change's payload is encoded once
 * for all its subscribers rather than once per socket. The text is what JSON.stringify gives for
 * the whole frame.
 */
export function encodeTextFrameWithPayload(
  frame: Omit<Frame, 'payload'>,
  payloadJson: string,
  vsn: Vsn,
): string {
  const { joinRef, ref, topic, event } = frame;
  const json = JSON.stringify;
  if (vsn === '2.0.0') {
    return `[${json(joinRef)},${json(ref)},${json(topic)},${json(event)},${payloadJson}]`;
  }
  return `{"join_ref":${json(joinRef)},"ref":${json(ref)},"topic":${json(topic)},"event":${json(event)},"payload":${payloadJson}}`;
}

/** A user broadcast as realtime-js pushes it (kind 3) or a JSON `broadcast` push carries it. */
export interface UserBroadcast {
  joinRef: string | null;
  ref: string | null;
  topic: string;
  event: string;
  /** Parsed JSON, or the raw bytes of a binary payload. */
  payload: unknown;
  binary: boolean;
  meta: Record<string, unknown> | null;
}

/** realtime-js `_encodeUserBroadcastPush`: kind, five lengths, encoding, then the fields. */
export function decodeBroadcastPush(bytes: Buffer): UserBroadcast {
  if (bytes.length < 7 || bytes[0] !== KIND_USER_BROADCAST_PUSH) {
    throw new ProtocolError('unsupported binary frame');
  }
  const lengths = [bytes[1], bytes[2], bytes[3], bytes[4], bytes[5]] as number[];
  const encoding = bytes[6];
  let offset = 7;
  const fields = lengths.map((length) => {
    const field = bytes.subarray(offset, offset + length).toString('utf8');
    offset += length;
    return field;
  });
  if (offset > bytes.length) throw new ProtocolError('binary frame shorter than its header');
  const [joinRef, ref, topic, event, meta] = fields as string[];
  const body = bytes.subarray(offset);
  let payload: unknown = Buffer.from(body);
  if (encoding === ENCODING_JSON) {
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ProtocolError('broadcast payload is not JSON');
    }
  }
  let parsedMeta: Record<string, unknown> | null = null;
  if (meta) {
    try {
      parsedMeta = asObject(JSON.parse(meta));
    } catch {
      throw new ProtocolError('broadcast metadata is not JSON');
    }
  }
  return {
    joinRef: joinRef || null,
    ref: ref || null,
    topic: topic ?? '',
    event: event ?? '',
    payload,
    binary: encoding === ENCODING_BINARY,
    meta: parsedMeta,
  };
}

/** realtime-js `_decodeUserBroadcast`: kind 4, four lengths... then topic, event, meta, payload. */
export function encodeUserBroadcast(broadcast: UserBroadcast): Buffer {
  const topic = Buffer.from(broadcast.topic, 'utf8');
  const event = Buffer.from(broadcast.event, 'utf8');
  const meta = Buffer.from(broadcast.meta ? JSON.stringify(broadcast.meta) : '', 'utf8');
  const body = broadcast.binary
    ? Buffer.from(broadcast.payload as Uint8Array)
    : Buffer.from(JSON.stringify(broadcast.payload ?? {}), 'utf8');
  if (topic.length > 255 || event.length > 255 || meta.length > 255) {
    throw new ProtocolError('broadcast topic, event and metadata are limited to 255 bytes');
  }
  const header = Buffer.from([
    KIND_USER_BROADCAST,
    topic.length,
    event.length,
    meta.length,
    broadcast.binary ? ENCODING_BINARY : ENCODING_JSON,
  ]);
  return Buffer.concat([header, topic, event, meta, body]);
}
