// Reading a body a breakpoint would hold (docs/proxy.md "Breakpoints"): a held message is read
// whole, up to the capture cap; a bigger one is not held, and what was read goes on first.
import type { Readable } from 'node:stream';

/** The first `cap` bytes of a body, and whether that was all of it (then the stream is done). */
export function readHeldBody(
  stream: Readable,
  cap: number,
): Promise<{ chunks: Buffer[]; size: number; complete: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (complete: boolean) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      resolve({ chunks, size, complete });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > cap) {
        stream.pause();
        done(false);
      }
    };
    const onEnd = () => done(true);
    // Gone before the end: what came is all there will be; the caller sees the client gone.
    const onClose = () => done(true);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
  });
}
