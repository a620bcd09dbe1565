// The Chrome DevTools Protocol over Chromium's --remote-debugging-pipe: JSON messages, each ended
// by a NUL byte, written to the browser's descriptor 3 and read from its descriptor 4. A pipe
// rather than --remote-debugging-port, because a port on loopback would let any local process
// (another user's sandbox included, were it ever to reach the host network) drive the browser.
// Flat sessions (Target.attachToTarget with flatten) put every target on this one connection,
// told apart by `sessionId`.
import type { Readable, Writable } from 'node:stream';

/** A command Chromium answered with an error, or one that could not be answered. */
export class CdpError extends Error {
  readonly method: string;
  /** Chromium's JSON-RPC error code, or null for a timeout or a closed connection. */
  readonly cdpCode: number | null;

  constructor(method: string, message: string, cdpCode: number | null = null) {
    super(`${method}: ${message}`);
    this.name = 'CdpError';
    this.method = method;
    this.cdpCode = cdpCode;
  }
}

interface Pending {
  method: string;
  resolve(result: Record<string, unknown>): void;
  reject(error: CdpError): void;
  timer: NodeJS.Timeout;
}

export type CdpEventHandler = (params: Record<string, unknown>, sessionId?: string) => void;

/** A command that takes longer than this is abandoned (the caller's own timeouts are shorter). */
const DEFAULT_TIMEOUT_MS = 60_000;
/** One message above this (a screenshot is a few MB) means something is wrong: drop the browser. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class CdpPipe {
  private readonly output: Writable;
  private readonly pending = new Map<number, Pending>();
  private readonly handlers = new Map<string, Set<CdpEventHandler>>();
  private readonly closeHandlers = new Set<(reason: string) => void>();
  private chunks: Buffer[] = [];
  private buffered = 0;
  private nextId = 1;
  private closedReason: string | null = null;

  constructor(input: Readable, output: Writable) {
    this.output = output;
    input.on('data', (chunk: Buffer) => this.receive(chunk));
    input.on('end', () => this.close('the browser closed its DevTools pipe'));
    input.on('error', (error) => this.close(`the DevTools pipe failed: ${error.message}`));
    output.on('error', (error) => this.close(`the DevTools pipe failed: ${error.message}`));
  }

  get closed(): boolean {
    return this.closedReason !== null;
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    options: { sessionId?: string; timeoutMs?: number } = {},
  ): Promise<Record<string, unknown>> {
    if (this.closedReason !== null) {
      return Promise.reject(new CdpError(method, this.closedReason));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CdpError(method, `no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      const message = {
        id,
        method,
        params,
        ...(options.sessionId ? { sessionId: options.sessionId } : {}),
      };
      this.output.write(`${JSON.stringify(message)}\0`);
    });
  }

  /** Subscribes to an event; the returned function unsubscribes. */
  on(event: string, handler: CdpEventHandler): () => void {
    let set = this.handlers.get(event);
    if (!set) {
      set = new Set();
      this.handlers.set(event, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  onClose(handler: (reason: string) => void): void {
    this.closeHandlers.add(handler);
  }

  /** Fails every command still waiting; later sends fail at once. */
  close(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(new CdpError(pending.method, reason));
    }
    this.pending.clear();
    for (const handler of this.closeHandlers) handler(reason);
  }

  private receive(chunk: Buffer): void {
    let start = 0;
    let end = chunk.indexOf(0, start);
    while (end >= 0) {
      this.chunks.push(chunk.subarray(start, end));
      const text = Buffer.concat(this.chunks).toString('utf8');
      this.chunks = [];
      this.buffered = 0;
      this.dispatch(text);
      start = end + 1;
      end = chunk.indexOf(0, start);
    }
    if (start < chunk.length) {
      this.chunks.push(chunk.subarray(start));
      this.buffered += chunk.length - start;
      if (this.buffered > MAX_MESSAGE_BYTES) this.close('a DevTools message exceeded 64 MiB');
    }
  }

  private dispatch(text: string): void {
    let message: {
      id?: number;
      result?: Record<string, unknown>;
      error?: { code?: number; message?: string };
      method?: string;
      params?: Record<string, unknown>;
      sessionId?: string;
    };
    try {
      message = JSON.parse(text);
    } catch {
      this.close('the browser sent a message that is not JSON');
      return;
    }
    if (typeof message.id === 'number') {
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      clearTimeout(pending.timer);
      if (message.error) {
        pending.reject(
          new CdpError(
            pending.method,
            message.error.message ?? 'failed',
            message.error.code ?? null,
          ),
        );
      } else {
        pending.resolve(message.result ?? {});
      }
      return;
    }
    if (message.method) {
      for (const handler of this.handlers.get(message.method) ?? []) {
        handler(message.params ?? {}, message.sessionId);
      }
    }
  }
}
