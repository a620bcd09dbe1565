// The assistant's Server-Sent Events stream (001 §6): `event: <name>` + one JSON `data` line per
// event, `: ping` comment frames on an interval (001 §8, about every 15 s) so proxies and the
// edge runtime's idle timeout see traffic while tools run. After close() or a client abort
// nothing more is written: every send is a no-op from then on.

export type AskEvent =
  | { event: 'text'; data: { delta: string } }
  | { event: 'tool'; data: { label: string } }
  | { event: 'artifact'; data: Record<string, unknown> }
  | { event: 'done'; data: { answer: string } }
  | { event: 'error'; data: { message: string } };

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // Proxies such as nginx buffer responses unless told not to.
  'x-accel-buffering': 'no',
} as const;

export interface EventStream {
  readonly body: ReadableStream<Uint8Array>;
  /** False once closed or cancelled by the client. */
  readonly open: boolean;
  send(event: AskEvent): void;
  close(): void;
}

export function formatEvent({ event, data }: AskEvent): string {
  // JSON.stringify escapes every newline, so one data line always carries the whole payload.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A stream that pings every pingMs and calls onCancel when the client goes away. */
export function createEventStream(pingMs: number, onCancel: () => void): EventStream {
  const encoder = new TextEncoder();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
  let timer: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    open = false;
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  const write = (text: string) => {
    if (!open || !controller) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      stop();
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start(streamController) {
      controller = streamController;
      timer = setInterval(() => write(': ping\n\n'), pingMs);
    },
    cancel() {
      stop();
      onCancel();
    },
  });
  return {
    body,
    get open() {
      return open;
    },
    send: (event) => write(formatEvent(event)),
    close() {
      if (!open) return;
      stop();
      try {
        controller?.close();
      } catch {
        // Already errored or cancelled: nothing to close.
      }
    },
  };
}
