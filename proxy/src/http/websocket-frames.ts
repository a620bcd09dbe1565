// Reads the WebSocket frames (RFC 6455 §5.2) passing one way through the proxy, without touching
// them: the bytes are forwarded as they are; this only keeps a bounded record of the messages
// (direction, opcode, time, size and as much payload as the cap allows), as the tools users
// compare us with show them. Client frames are unmasked for the record (§5.3). Fragments are
// joined into their message (§5.4). A message compressed by permessage-deflate (RSV1, RFC 7692)
// is kept as it travelled, marked compressed.

export interface WebSocketMessage {
  direction: 'send' | 'receive';
  /** 1 text, 2 binary, 8 close, 9 ping, 10 pong. */
  opcode: number;
  /** Milliseconds since the connection opened. */
  at: number;
  size: number;
  text?: string;
  base64?: string;
  truncated: boolean;
  compressed?: boolean;
}

export interface MessageBudget {
  /** Messages kept (both directions together); later ones are only counted. */
  messages: number;
  /** Payload bytes kept (both directions together). */
  bytes: number;
}

export class FrameReader {
  private readonly direction: 'send' | 'receive';
  private readonly budget: MessageBudget;
  private readonly openedAt: number;
  private readonly record: WebSocketMessage[];
  private header = Buffer.alloc(0);
  /** The frame being read: payload bytes left, its mask, and where the mask stands. */
  private remaining = 0;
  private mask: Buffer | null = null;
  private maskOffset = 0;
  /** The message being assembled (fragments join into it). */
  private message: { opcode: number; compressed: boolean; size: number; kept: Buffer[] } | null =
    null;
  private control: { opcode: number; size: number; kept: Buffer[] } | null = null;
  private finalFrame = false;
  /** Messages seen in this direction, kept or not. */
  count = 0;
  /** Set when the stream stops looking like WebSocket frames; then nothing more is read. */
  broken = false;

  constructor(
    direction: 'send' | 'receive',
    record: WebSocketMessage[],
    budget: MessageBudget,
    openedAt: number,
  ) {
    this.direction = direction;
    this.record = record;
    this.budget = budget;
    this.openedAt = openedAt;
  }

  push(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length && !this.broken) {
      if (this.remaining === 0) {
        offset = this.readHeader(chunk, offset);
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - offset);
      this.keep(chunk.subarray(offset, offset + take));
      offset += take;
      this.remaining -= take;
      if (this.remaining === 0) this.endFrame();
    }
  }

  /** Collects header bytes until the whole header is there; returns the new offset. */
  private readHeader(chunk: Buffer, offset: number): number {
    const needed = this.headerLength();
    const wanted = needed === null ? 2 : needed;
    const take = Math.min(wanted - this.header.length, chunk.length - offset);
    this.header = Buffer.concat([this.header, chunk.subarray(offset, offset + take)]);
    const full = this.headerLength();
    if (full === null || this.header.length < full) return offset + take;
    this.startFrame();
    return offset + take;
  }

  /** The full header length once the first two bytes are known (§5.2). */
  private headerLength(): number | null {
    if (this.header.length < 2) return null;
    const second = this.header[1] as number;
    const lengthBytes = (second & 0x7f) === 126 ? 2 : (second & 0x7f) === 127 ? 8 : 0;
    return 2 + lengthBytes + (second & 0x80 ? 4 : 0);
  }

  private startFrame(): void {
    const first = this.header[0] as number;
    const second = this.header[1] as number;
    const opcode = first & 0x0f;
    this.finalFrame = (first & 0x80) !== 0;
    let length = second & 0x7f;
    let position = 2;
    if (length === 126) {
      length = this.header.readUInt16BE(2);
      position = 4;
    } else if (length === 127) {
      const big = this.header.readBigUInt64BE(2);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) {
        this.broken = true;
        return;
      }
      length = Number(big);
      position = 10;
    }
    this.mask = second & 0x80 ? this.header.subarray(position, position + 4) : null;
    this.maskOffset = 0;
    this.header = Buffer.alloc(0);
    if (opcode >= 8) {
      this.control = { opcode, size: 0, kept: [] };
    } else if (opcode === 0) {
      if (!this.message) this.broken = true; // a continuation with nothing to continue
    } else if (opcode <= 2) {
      this.message = { opcode, compressed: (first & 0x40) !== 0, size: 0, kept: [] };
    } else {
      this.broken = true; // reserved opcodes: not a stream we understand
    }
    this.remaining = length;
    if (length === 0) this.endFrame();
  }

  private keep(bytes: Buffer): void {
    const target = this.control ?? this.message;
    if (!target) return;
    target.size += bytes.length;
    const room = this.budget.bytes;
    if (room <= 0 || this.budget.messages <= 0) return;
    const kept = Buffer.from(bytes.subarray(0, room));
    if (this.mask) {
      for (let index = 0; index < kept.length; index += 1) {
        kept[index] =
          (kept[index] as number) ^ (this.mask[(this.maskOffset + index) % 4] as number);
      }
    }
    this.maskOffset += bytes.length;
    this.budget.bytes -= kept.length;
    target.kept.push(kept);
  }

  private endFrame(): void {
    if (this.control) {
      this.emit(this.control.opcode, this.control.size, this.control.kept, false);
      this.control = null;
      return;
    }
    if (this.message && this.finalFrame) {
      const { opcode, size, kept, compressed } = this.message;
      this.emit(opcode, size, kept, compressed);
      this.message = null;
    }
  }

  private emit(opcode: number, size: number, kept: Buffer[], compressed: boolean): void {
    this.count += 1;
    if (this.budget.messages <= 0) return;
    this.budget.messages -= 1;
    const payload = Buffer.concat(kept);
    const asText = opcode === 1 && !compressed && !payload.includes(0);
    this.record.push({
      direction: this.direction,
      opcode,
      at: Math.round((performance.now() - this.openedAt) * 100) / 100,
      size,
      ...(asText ? { text: payload.toString('utf8') } : { base64: payload.toString('base64') }),
      truncated: payload.length < size,
      ...(compressed ? { compressed: true } : {}),
    });
  }
}
