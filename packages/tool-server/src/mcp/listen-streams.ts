// The 2025-11-25 listen stream: `GET /` with Accept: text/event-stream opens an SSE stream on
// which the server sends notifications it was not asked for; here notifications/tools/list_changed
// and notifications/resources/list_changed on every deploy (001 §6). The SDK's stateless handler
// answers GET with 405, so this part is ours. A stream ends with its token's lifetime, when the
// token is revoked or its account suspended (checked at every keep-alive), on stop, and when the
// client goes away; comment frames keep proxies from closing it.
//
// Limits (docs/tool-server.md "Listen streams"): a token holds at most STREAMS_PER_TOKEN streams
// and an account, all its tokens together, STREAMS_PER_USER. A stream past either limit is never
// refused: the holder's OLDEST stream is closed instead, after an SSE `retry` field. One token is
// shared by every app behind mcp-remote, and the SDK clients never retry a refused first GET (they
// only report it), while they do reconnect a stream the server closes, after `retry` ms
// (2025-11-25 transports: the client MUST respect `retry`). The oldest is also the likeliest to
// belong to a client that is gone without closing its socket.

const KEEPALIVE_MS = 15_000;
export const STREAMS_PER_TOKEN = 32;
export const STREAMS_PER_USER = 64;
/** How long a client whose stream was closed for a newer one waits before it reconnects. */
export const REPLACED_RETRY_MS = 5_000;
const encoder = new TextEncoder();

/** Who holds a stream: the access token (its jti) and its account (sub). */
export interface StreamHolder {
  token: string;
  user: string;
}

interface OpenStream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  holder: StreamHolder;
  expiry: NodeJS.Timeout;
}

export class ListenStreams {
  /** Open streams, oldest first (a Set iterates in insertion order). */
  private readonly streams = new Set<OpenStream>();
  private readonly isLive: (token: string) => Promise<boolean>;
  private ticker: NodeJS.Timeout | undefined;

  /** `isLive` answers whether a token may still listen (not revoked, account in good standing). */
  constructor(isLive: (token: string) => Promise<boolean>) {
    this.isLive = isLive;
  }

  /** An SSE response for `holder` until `expiresAt` (epoch seconds), making room if needed. */
  open(holder: StreamHolder, expiresAt: number, headers: Record<string, string>): Response {
    this.makeRoom(
      (stream) => stream.holder.token === holder.token,
      STREAMS_PER_TOKEN,
      `this token opened more than ${STREAMS_PER_TOKEN} listen streams`,
    );
    this.makeRoom(
      (stream) => stream.holder.user === holder.user,
      STREAMS_PER_USER,
      `this account opened more than ${STREAMS_PER_USER} listen streams`,
    );
    let stream: OpenStream | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const entry: OpenStream = {
          controller,
          holder,
          expiry: setTimeout(() => this.end(entry), Math.max(0, expiresAt * 1000 - Date.now())),
        };
        stream = entry;
        this.streams.add(entry);
        this.ticker ??= setInterval(() => void this.keepAlive(), KEEPALIVE_MS);
        // A priming event lets clients confirm the stream (2025-11-25 transports).
        controller.enqueue(encoder.encode(': listening\n\n'));
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

  /** How many streams are open, for one token when given. */
  count(token?: string): number {
    let open = 0;
    for (const stream of this.streams) if (!token || stream.holder.token === token) open += 1;
    return open;
  }

  closeAll(): void {
    for (const stream of this.streams) this.end(stream);
  }

  /** Closes the oldest of the streams `held` selects until one more fits under `limit`. */
  private makeRoom(held: (stream: OpenStream) => boolean, limit: number, why: string): void {
    const mine = [...this.streams].filter(held);
    for (const stream of mine.slice(0, Math.max(0, mine.length - limit + 1))) {
      // 2025-11-25 transports: a server that closes a stream SHOULD send `retry` first, and the
      // client MUST wait that long before it reconnects with GET.
      this.write(stream, `retry: ${REPLACED_RETRY_MS}\n: closed: ${why}; reconnect\n\n`);
      this.end(stream);
    }
  }

  /** Every KEEPALIVE_MS: one liveness check per token, then a ping or the end for its streams. */
  private async keepAlive(): Promise<void> {
    const byToken = new Map<string, OpenStream[]>();
    for (const stream of this.streams) {
      const held = byToken.get(stream.holder.token);
      if (held) held.push(stream);
      else byToken.set(stream.holder.token, [stream]);
    }
    await Promise.all(
      [...byToken].map(async ([token, held]) => {
        // A store outage does not cut streams: the check then counts as live.
        const live = await this.isLive(token).catch(() => true);
        for (const stream of held) {
          if (!this.streams.has(stream)) continue;
          if (live) this.write(stream, ': ping\n\n');
          else this.end(stream);
        }
      }),
    );
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
    clearTimeout(stream.expiry);
    this.streams.delete(stream);
    if (this.streams.size === 0 && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }
}
