// The adb transport's message framing (AOSP system/core/adb/protocol.txt): a 24-byte header of six
// little-endian uint32 (command, arg0, arg1, data_length, data_check, magic = command ^ 0xffffffff)
// and the payload. Parsing does no I/O, so the device double feeds it whatever the socket gives.

export const A_SYNC = 0x434e5953;
export const A_CNXN = 0x4e584e43;
export const A_AUTH = 0x48545541;
export const A_OPEN = 0x4e45504f;
export const A_OKAY = 0x59414b4f;
export const A_CLSE = 0x45534c43;
export const A_WRTE = 0x45545257;

/** protocol.txt: from this version on the payload checksum is not computed nor checked. */
export const A_VERSION_SKIP_CHECKSUM = 0x01000001;
export const A_VERSION_MIN = 0x01000000;

const HEADER_BYTES = 24;

export interface AdbMessage {
  command: number;
  arg0: number;
  arg1: number;
  data: Buffer;
}

export class AdbProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdbProtocolError';
  }
}

/** The pre-1.0.1 data_check: the unsigned sum of the payload's bytes. */
export function sumPayload(data: Buffer): number {
  let sum = 0;
  for (const byte of data) sum = (sum + byte) >>> 0;
  return sum;
}

export function encodeMessage(message: AdbMessage): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(message.command >>> 0, 0);
  header.writeUInt32LE(message.arg0 >>> 0, 4);
  header.writeUInt32LE(message.arg1 >>> 0, 8);
  header.writeUInt32LE(message.data.length, 12);
  // Always sent: a peer still on A_VERSION_MIN checks it, a newer one ignores it.
  header.writeUInt32LE(sumPayload(message.data), 16);
  header.writeUInt32LE((message.command ^ 0xffffffff) >>> 0, 20);
  return Buffer.concat([header, message.data]);
}

export function commandName(command: number): string {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(command >>> 0);
  return bytes.toString('latin1');
}

/** Splits a byte stream into messages; throws AdbProtocolError on a bad magic or checksum. */
export class AdbMessageReader {
  private pending: Buffer = Buffer.alloc(0);
  private readonly maxPayload: number;
  /** The negotiated version; below A_VERSION_SKIP_CHECKSUM the checksum is verified. */
  private readonly version: () => number;

  constructor(maxPayload: number, version: () => number) {
    this.maxPayload = maxPayload;
    this.version = version;
  }

  push(chunk: Buffer): AdbMessage[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const messages: AdbMessage[] = [];
    while (this.pending.length >= HEADER_BYTES) {
      const command = this.pending.readUInt32LE(0);
      const length = this.pending.readUInt32LE(12);
      const check = this.pending.readUInt32LE(16);
      const magic = this.pending.readUInt32LE(20);
      if (magic !== (command ^ 0xffffffff) >>> 0) {
        throw new AdbProtocolError(`bad magic for ${commandName(command)}`);
      }
      if (length > this.maxPayload) {
        throw new AdbProtocolError(`payload of ${length} bytes exceeds ${this.maxPayload}`);
      }
      if (this.pending.length < HEADER_BYTES + length) break;
      const data = this.pending.subarray(HEADER_BYTES, HEADER_BYTES + length);
      if (this.version() < A_VERSION_SKIP_CHECKSUM && check !== sumPayload(data)) {
        throw new AdbProtocolError(`bad checksum for ${commandName(command)}`);
      }
      messages.push({
        command,
        arg0: this.pending.readUInt32LE(4),
        arg1: this.pending.readUInt32LE(8),
        data: Buffer.from(data),
      });
      this.pending = this.pending.subarray(HEADER_BYTES + length);
    }
    return messages;
  }
}
