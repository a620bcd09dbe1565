// The 2025-11-25 listen stream: `GET /` with Accept: text/event-stream opens an SSE stream on
// which the server sends notifications it was not asked for; here notifications/tools/list_changed
// and notifications/resources/list_changed on every deploy (001 §6). The SDK's stateless handler
// answers GET with 405, so this part is ours. A stream ends with its token's lifetime, when the
// token is revoked or its account suspended (checked at every keep-alive), on stop, and when the
// client goes away; comment frames keep proxies from closing it. One token holds a few streams at
// most, so a single token cannot pin the server's sockets.

const KEEPALIVE_MS = 15_000;
const STREAMS_PER_TOKEN = 4;
const encoder = new TextEncoder();

interface OpenStream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  timers: NodeJS.Timeout[];
  /** The token (jti) holding it. */
  key: string;
}

export class ListenStreams {
  private readonly streams = new Set<OpenStream>();
  private readonly isLive: (key: string) => Promise<boolean>;

  /** `isLive` answers whether a token may still listen (not revoked, account in good standing). */
  constructor(isLive: (key: string) => Promise<boolean>) {
    this.isLive = isLive;
  }

  /** An SSE response for token `key` until `expiresAt` (epoch seconds), or 429 past the cap. */
  open(key: string, expiresAt: number, headers: Record<string, string>): Response {
    const held = [...this.streams].filter((stream) => stream.key === key).length;
    if (held >= STREAMS_PER_TOKEN) {
      return new Response(
        JSON.stringify({
          error: 'too_many_requests',
          error_description: `This token already holds ${STREAMS_PER_TOKEN} listen streams.`,
        }),
        {
          status: 429,
          headers: { 'content-type': 'application/json', 'retry-after': '15', ...headers },
        },
      );
    }
    let stream: OpenStream | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const entry: OpenStream = { controller, timers: [], key };
        stream = entry;
        this.streams.add(entry);
        // A priming event lets clients confirm the stream (2025-11-25 transports).
        controller.enqueue(encoder.encode(': listening\n\n'));
        entry.timers.push(
          setInterval(() => void this.keepAlive(entry), KEEPALIVE_MS),
          setTimeout(() => this.end(entry), Math.max(0, expiresAt * 1000 - Date.now())),
        );
      },
      cancel: () => {
        if (stream) this.forget(stream);
      },
    });
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        ...headers,
      },
    });
  }

  /** Sends one JSON-RPC notification to every open stream. */
  broadcast(method: string): void {
    const frame = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method })}\n\n`;
    for (const stream of this.streams) this.write(stream, frame);
  }

  closeAll(): void {
    for (const stream of this.streams) this.end(stream);
  }

  private async keepAlive(stream: OpenStream): Promise<void> {
    const live = await this.isLive(stream.key).catch(() => true);
    if (live) this.write(stream, ': ping\n\n');
    else this.end(stream);
  }

  private write(stream: OpenStream, frame: string): void {
    try {
      stream.controller.enqueue(encoder.encode(frame));
    } catch {
      this.forget(stream);
    }
  }

  private end(stream: OpenStream): void {
    this.forget(stream);
    try {
      stream.controller.close();
    } catch {
      // Already closed by the client.
    }
  }

  private forget(stream: OpenStream): void {
    for (const timer of stream.timers) clearTimeout(timer);
    this.streams.delete(stream);
  }
}
