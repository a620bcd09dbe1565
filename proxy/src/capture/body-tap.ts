// Keeps the first `cap` bytes of a streamed body for the capture while the whole body streams
// through, so a large download passes with bounded memory (issue: capture proxy).
export interface CapturedBody {
  text?: string;
  base64?: string;
  encoding: 'utf8' | 'base64';
  /** Bytes that passed on the wire. */
  size: number;
  truncated: boolean;
  contentType: string | null;
}

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
    const bytes = Buffer.concat(this.chunks);
    const textual = !contentEncoding && TEXTUAL.test(contentType ?? '');
    return {
      ...(textual ? { text: bytes.toString('utf8') } : { base64: bytes.toString('base64') }),
      encoding: textual ? 'utf8' : 'base64',
      size: this.size,
      truncated: this.size > this.kept,
      contentType: contentType ?? null,
    };
  }
}
