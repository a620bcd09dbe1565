// The WebSocket frame reader (RFC 6455 §5) against frames built by hand: masked client frames,
// fragments, the 16-bit and 64-bit lengths, control frames between fragments, input cut at every
// byte, the message and byte budget, compressed messages, and a stream that is not WebSocket.
import { describe, expect, it } from 'vitest';
import { FrameReader, type WebSocketMessage } from '../src/http/websocket-frames.ts';

function frame(options: {
  opcode: number;
  payload: Buffer;
  fin?: boolean;
  mask?: Buffer;
  rsv1?: boolean;
}): Buffer {
  const { opcode, payload, fin = true, mask, rsv1 = false } = options;
  const first = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode;
  const length = payload.length;
  const lengthBytes =
    length < 126
      ? Buffer.from([length | (mask ? 0x80 : 0)])
      : length < 65_536
        ? Buffer.from([126 | (mask ? 0x80 : 0), length >> 8, length & 255])
        : Buffer.concat([Buffer.from([127 | (mask ? 0x80 : 0)]), bigLength(length)]);
  const body = mask ? payload.map((byte, index) => byte ^ (mask[index % 4] as number)) : payload;
  return Buffer.concat([Buffer.from([first]), lengthBytes, mask ?? Buffer.alloc(0), body]);
}

function bigLength(length: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(length));
  return bytes;
}

function reader(budget = { messages: 100, bytes: 1 << 20 }) {
  const record: WebSocketMessage[] = [];
  return { record, read: new FrameReader('send', record, budget, performance.now()) };
}

const MASK = Buffer.from([0x12, 0x34, 0x56, 0x78]);

describe('FrameReader', () => {
  it('unmasks a client text frame and reads it fed one byte at a time', () => {
    const { record, read } = reader();
    const bytes = frame({ opcode: 1, payload: Buffer.from('hello, origin'), mask: MASK });
    for (const byte of bytes) read.push(Buffer.from([byte]));
    expect(record).toEqual([
      expect.objectContaining({
        direction: 'send',
        opcode: 1,
        text: 'hello, origin',
        size: 13,
        truncated: false,
      }),
    ]);
  });

  it('joins fragments around a ping, and reads 16- and 64-bit lengths', () => {
    const { record, read } = reader();
    const mid = Buffer.alloc(300, 0x61);
    const big = Buffer.alloc(70_000, 0x62);
    read.push(
      Buffer.concat([
        frame({ opcode: 1, payload: Buffer.from('part one, '), fin: false }),
        frame({ opcode: 9, payload: Buffer.from('ping') }),
        frame({ opcode: 0, payload: Buffer.from('part two') }),
        frame({ opcode: 2, payload: mid }),
        frame({ opcode: 2, payload: big }),
      ]),
    );
    expect(record.map((message) => [message.opcode, message.size])).toEqual([
      [9, 4],
      [1, 18],
      [2, 300],
      [2, 70_000],
    ]);
    expect(record[1]?.text).toBe('part one, part two');
  });

  it('keeps only what the budget allows and counts the rest', () => {
    const { record, read } = reader({ messages: 2, bytes: 10 });
    for (let index = 0; index < 5; index += 1) {
      read.push(frame({ opcode: 1, payload: Buffer.from(`message number ${index}`) }));
    }
    expect(read.count).toBe(5);
    expect(record).toHaveLength(2);
    expect(record[0]).toMatchObject({ text: 'message nu', truncated: true, size: 16 });
    expect(record[1]).toMatchObject({ text: '', truncated: true, size: 16 });
  });

  it('keeps a compressed message as it travelled, marked compressed', () => {
    const { record, read } = reader();
    read.push(frame({ opcode: 1, payload: Buffer.from([0xf2, 0x48, 0xcd]), rsv1: true }));
    expect(record[0]).toMatchObject({
      compressed: true,
      base64: Buffer.from([0xf2, 0x48, 0xcd]).toString('base64'),
    });
  });

  it('stops reading, without throwing, a stream that is not WebSocket', () => {
    const { record, read } = reader();
    read.push(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    expect(read.broken).toBe(true);
    expect(record).toEqual([]);
  });
});
