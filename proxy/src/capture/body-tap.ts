// Keeps the first `cap` bytes of a streamed body for the capture while the whole body streams
// through, so a large download passes with bounded memory (docs/proxy.md "What happens to a
// request", Bodies). A complete body sent with gzip, deflate, br or zstd is stored decoded, with
// the wire size recorded.
import zlib from 'node:zlib';
export interface CapturedBody {
  text?: string;
  base64?: string;
  encoding: 'utf8' | 'base64';
  /** Bytes that passed on the wire. */
  size: number;
  /** Bytes after content decoding, when the stored body was decoded. */
  decodedSize?: number;
  /** The Content-Encoding on the wire, if any. */
  contentEncoding?: string;
  /** False when the body is stored as it was on the wire (truncated, unknown or broken encoding). */
  decoded?: boolean;
  truncated: boolean;
  contentType: string | null;
}

type Decoder = (input: Buffer, options: zlib.ZlibOptions) => Buffer;
const DECODERS: Record<string, Decoder> = {
  gzip: zlib.gunzipSync,
  'x-gzip': zlib.gunzipSync,
  deflate: (input, options) => {
    try {
      return zlib.inflateSync(input, options);
    } catch {
      return zlib.inflateRawSync(input, options); // servers that send raw deflate
    }
  },
  br: zlib.brotliDecompressSync as Decoder,
  zstd: zlib.zstdDecompressSync as Decoder,
};

const TEXTUAL =
  /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded|graphql)|[^;]*\+(json|xml))/i;

export class BodyTap {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  size = 0;

  private readonly cap: number;

  constructor(cap: number) {
    this.cap = cap;
  }

  push(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.kept >= this.cap) return;
    const slice = chunk.subarray(0, this.cap - this.kept);
    this.chunks.push(slice);
    this.kept += slice.length;
  }

  result(
    contentType: string | undefined,
    contentEncoding: string | undefined,
  ): CapturedBody | null {
    if (this.size === 0) return null;
    const wire = Buffer.concat(this.chunks);
    const truncated = this.size > this.kept;
    const coding = contentEncoding?.trim().toLowerCase();
    let bytes: Buffer = wire;
    let decoded: boolean | undefined;
    if (coding && coding !== 'identity') {
      const decoder = DECODERS[coding];
      decoded = false;
      if (decoder && !truncated) {
        try {
          // The decoded body counts against the cap too: a small compressed body can expand
          // enormously, and many such bodies would not fit one batch. Past the cap the wire
          // bytes are kept instead.
          bytes = decoder(wire, { maxOutputLength: Math.max(this.cap, 1) });
          decoded = true;
        } catch {
          bytes = wire;
        }
      }
    }
    // jsonb cannot hold U+0000, so text containing it is kept as base64.
    const textual = decoded !== false && TEXTUAL.test(contentType ?? '') && !bytes.includes(0);
    return {
      ...(textual ? { text: bytes.toString('utf8') } : { base64: bytes.toString('base64') }),
      encoding: textual ? 'utf8' : 'base64',
      size: this.size,
      ...(coding ? { contentEncoding: coding, decoded } : {}),
      ...(decoded ? { decodedSize: bytes.length } : {}),
      truncated,
      contentType: contentType ?? null,
    };
  }
}
