// A streaming reader of multipart/form-data (RFC 7578 over RFC 2046 §5.1) for uploads: the text
// fields before the first file part are collected, then the file's content is handed over as a
// stream, so a large file never sits in memory. storage-js puts its fields (cacheControl,
// metadata) before the file, and storage-api reads only those (fields after the file are ignored
// there too).
import { storageErrors } from './storage-error.ts';

export interface MultipartFile {
  contentType: string;
  content: AsyncIterable<Uint8Array>;
}

export interface MultipartHead {
  fields: Map<string, string>;
  file: MultipartFile | undefined;
}

export interface MultipartLimits {
  /** Largest text field, in bytes. */
  fieldBytes: number;
  /** Fields kept before the file; later ones are skipped. */
  fields: number;
  /** The refusal of a field over `fieldBytes`. */
  fieldTooLong: () => Error;
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
const HEADER_BYTES = 16 * 1024;

/** The boundary parameter of a multipart/form-data Content-Type, quoted or not. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

function malformed(detail: string) {
  return storageErrors.noContent(`Malformed multipart body: ${detail}`);
}

/** Pulls chunks on demand and finds delimiters across chunk edges. */
class ChunkReader {
  private buffer: Buffer = Buffer.alloc(0);
  private ended = false;
  private readonly source: AsyncIterator<Uint8Array>;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.source = source[Symbol.asyncIterator]();
  }

  private async pull(): Promise<boolean> {
    if (this.ended) return false;
    const next = await this.source.next();
    if (next.done) {
      this.ended = true;
      return false;
    }
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    return true;
  }

  async startsWith(bytes: Buffer): Promise<boolean> {
    while (this.buffer.length < bytes.length) {
      if (!(await this.pull())) break;
    }
    return this.buffer.subarray(0, bytes.length).equals(bytes);
  }

  skip(count: number): void {
    this.buffer = this.buffer.subarray(count);
  }

  /** The bytes before `delimiter` (which is consumed), holding at most `limit` of them. */
  async readUntil(delimiter: Buffer, limit: number, tooLong: () => Error): Promise<Buffer> {
    for (let searchFrom = 0; ; ) {
      const at = this.buffer.indexOf(delimiter, searchFrom);
      if (at >= 0) {
        const before = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + delimiter.length);
        return before;
      }
      if (this.buffer.length > limit + delimiter.length) throw tooLong();
      searchFrom = Math.max(0, this.buffer.length - delimiter.length + 1);
      if (!(await this.pull())) throw malformed('unexpected end');
    }
  }

  /** The bytes before `delimiter`, yielded as they arrive; the delimiter is consumed. */
  async *streamUntil(delimiter: Buffer): AsyncGenerator<Uint8Array> {
    for (;;) {
      const at = this.buffer.indexOf(delimiter);
      if (at >= 0) {
        const last = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + delimiter.length);
        if (last.length > 0) yield last;
        return;
      }
      // All but a possible partial delimiter at the end can go.
      const keep = delimiter.length - 1;
      if (this.buffer.length > keep) {
        const ready = this.buffer.subarray(0, this.buffer.length - keep);
        this.buffer = this.buffer.subarray(this.buffer.length - keep);
        yield ready;
      }
      if (!(await this.pull())) throw malformed('unexpected end');
    }
  }
}

interface PartHeaders {
  name: string | undefined;
  filename: string | undefined;
  contentType: string | undefined;
}

/** Content-Disposition parameters (RFC 7578 §4.2; RFC 6266 quoting). */
function dispositionParameters(value: string): Map<string, string> {
  const parameters = new Map<string, string>();
  const pattern = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const match of value.matchAll(pattern)) {
    const key = (match[1] as string).toLowerCase();
    const raw = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : (match[3] ?? '').trim();
    parameters.set(key, raw);
  }
  return parameters;
}

function parsePartHeaders(block: Buffer): PartHeaders {
  const headers: PartHeaders = { name: undefined, filename: undefined, contentType: undefined };
  for (const line of block.toString('utf8').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const field = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (field === 'content-disposition') {
      const parameters = dispositionParameters(value);
      headers.name = parameters.get('name');
      headers.filename = parameters.get('filename');
    } else if (field === 'content-type') {
      headers.contentType = value;
    }
  }
  return headers;
}

/**
 * Reads a multipart body up to its first file part. The file's `content` must be consumed
 * before anything else is read from `body`; the parts after it are never read.
 */
export async function readMultipartHead(
  body: AsyncIterable<Uint8Array>,
  boundary: string,
  limits: MultipartLimits,
): Promise<MultipartHead> {
  const reader = new ChunkReader(body);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const fields = new Map<string, string>();
  // The first delimiter may open the body without its CRLF; anything before it is preamble.
  await reader.readUntil(delimiter.subarray(2), HEADER_BYTES, () => malformed('long preamble'));
  for (;;) {
    if (await reader.startsWith(Buffer.from('--'))) return { fields, file: undefined };
    // Transport padding, then the line break that ends the delimiter line.
    const padding = await reader.readUntil(CRLF, 1024, () => malformed('bad delimiter line'));
    if (padding.toString('latin1').trim() !== '') throw malformed('bad delimiter line');
    let block: Buffer;
    if (await reader.startsWith(CRLF)) {
      reader.skip(CRLF.length);
      block = Buffer.alloc(0);
    } else {
      block = await reader.readUntil(HEADER_END, HEADER_BYTES, () => malformed('long headers'));
    }
    const part = parsePartHeaders(block);
    if (part.filename !== undefined) {
      return {
        fields,
        file: {
          contentType: part.contentType ?? 'application/octet-stream',
          content: reader.streamUntil(delimiter),
        },
      };
    }
    const value = await reader.readUntil(delimiter, limits.fieldBytes, limits.fieldTooLong);
    if (part.name !== undefined && fields.size < limits.fields && !fields.has(part.name)) {
      fields.set(part.name, value.toString('utf8'));
    }
  }
}
