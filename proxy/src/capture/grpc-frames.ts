// gRPC message framing (gRPC over HTTP/2, "Length-Prefixed-Message": a compressed flag byte and a
// 4-byte big-endian length, then the message), read as the body streams by, so a capture can say
// how many messages went each way and how big each was without keeping them (docs/proxy.md "What
// happens to a request").
const KEPT_SIZES = 100;

export class GrpcFrameCounter {
  private header = Buffer.alloc(5);
  private headerFilled = 0;
  private remaining = 0;
  count = 0;
  bytes = 0;
  compressed = 0;
  /** The first KEPT_SIZES message sizes, in order. */
  readonly sizes: number[] = [];

  push(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, chunk.length - offset);
        this.remaining -= take;
        offset += take;
        continue;
      }
      const take = Math.min(5 - this.headerFilled, chunk.length - offset);
      chunk.copy(this.header, this.headerFilled, offset, offset + take);
      this.headerFilled += take;
      offset += take;
      if (this.headerFilled < 5) return;
      this.headerFilled = 0;
      const size = this.header.readUInt32BE(1);
      this.count += 1;
      this.bytes += size;
      if (this.header[0] === 1) this.compressed += 1;
      if (this.sizes.length < KEPT_SIZES) this.sizes.push(size);
      this.remaining = size;
    }
  }

  summary(): { messages: number; bytes: number; compressed: number; sizes: number[] } {
    return {
      messages: this.count,
      bytes: this.bytes,
      compressed: this.compressed,
      sizes: this.sizes,
    };
  }
}
