// gRPC length-prefixed framing read as it streams by: messages split across chunks,
// several in one chunk, empty messages and the compressed flag.
import { describe, expect, it } from 'vitest';
import { GrpcFrameCounter } from '../src/capture/grpc-frames.ts';

function frame(size: number, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header[0] = compressed ? 1 : 0;
  header.writeUInt32BE(size, 1);
  return Buffer.concat([header, Buffer.alloc(size, 0x61)]);
}

describe('GrpcFrameCounter', () => {
  it('counts messages however the stream is cut', () => {
    const wire = Buffer.concat([frame(3), frame(0), frame(70_000, true), frame(1)]);
    for (const cut of [1, 2, 4, 5, 7, 4096, wire.length]) {
      const counter = new GrpcFrameCounter();
      for (let offset = 0; offset < wire.length; offset += cut) {
        counter.push(wire.subarray(offset, offset + cut));
      }
      expect(counter.summary(), `cut ${cut}`).toEqual({
        messages: 4,
        bytes: 70_004,
        compressed: 1,
        sizes: [3, 0, 70_000, 1],
      });
    }
  });

  it('keeps the first 100 sizes and counts the rest', () => {
    const counter = new GrpcFrameCounter();
    counter.push(Buffer.concat(Array.from({ length: 150 }, (_, index) => frame(index))));
    expect(counter.count).toBe(150);
    expect(counter.sizes).toHaveLength(100);
    expect(counter.sizes[99]).toBe(99);
  });
});
