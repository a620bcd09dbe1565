// HTTP/2 to origins (docs/proxy.md "What happens to a request", Interception): an intercepted
// HTTP/2 client's requests go to the origin over HTTP/2 when the origin offers it by ALPN (RFC 7540
// §3.3, RFC 7301), so gRPC (trailers, streaming both ways) works through interception. One session
// per origin and SNI name, opened on the first request: a TLS connection offering `h2` and
// `http/1.1`, the certificate checked as for HTTP/1.1 origins (system roots plus
// PROXY_UPSTREAM_CA_FILE, the client's SNI name), the address from the destination policy's lookup.
// An origin that picks HTTP/1.1 is remembered for ten minutes and served over the HTTP/1.1 agent
// meanwhile.
import http2, { type ClientHttp2Session } from 'node:http2';
import type { LookupFunction } from 'node:net';
import tls, { type SecureContext } from 'node:tls';
import type { Logger } from 'pino';

const HTTP1_REMEMBERED_MS = 10 * 60_000;
const CONNECT_TIMEOUT_MS = 15_000;

export interface OriginKey {
  host: string;
  port: number;
  /** None for an origin reached by address (request-upstream.ts, upstreamServername). */
  servername: string | undefined;
}

type Entry =
  | { kind: 'h2'; session: ClientHttp2Session }
  | { kind: 'h1'; until: number }
  | { kind: 'opening'; promise: Promise<ClientHttp2Session | null> };

export class Http2Origins {
  private readonly entries = new Map<string, Entry>();
  private readonly secureContext: SecureContext | undefined;
  private readonly lookupFor: (port: number) => LookupFunction;
  private readonly logger: Logger;

  constructor(options: {
    secureContext?: SecureContext;
    lookupFor(port: number): LookupFunction;
    logger: Logger;
  }) {
    this.secureContext = options.secureContext;
    this.lookupFor = options.lookupFor;
    this.logger = options.logger;
  }

  /** The origin's HTTP/2 session, or null when it speaks HTTP/1.1 only. Rejects when unreachable. */
  session(origin: OriginKey): Promise<ClientHttp2Session | null> {
    const key = `${origin.host}|${origin.port}|${origin.servername ?? ''}`;
    const entry = this.entries.get(key);
    if (entry?.kind === 'h2' && !entry.session.closed && !entry.session.destroyed) {
      return Promise.resolve(entry.session);
    }
    if (entry?.kind === 'h1' && entry.until > Date.now()) return Promise.resolve(null);
    if (entry?.kind === 'opening') return entry.promise;
    const promise = this.open(origin).then(
      (session) => {
        if (!session) {
          this.entries.set(key, { kind: 'h1', until: Date.now() + HTTP1_REMEMBERED_MS });
          return null;
        }
        this.entries.set(key, { kind: 'h2', session });
        const forget = () => {
          const current = this.entries.get(key);
          if (current?.kind === 'h2' && current.session === session) this.entries.delete(key);
        };
        session.once('close', forget);
        session.once('goaway', forget);
        session.on('error', (error) => {
          this.logger.debug({ err: error, origin: key }, 'origin HTTP/2 session error');
          forget();
        });
        return session;
      },
      (error: unknown) => {
        this.entries.delete(key);
        throw error;
      },
    );
    this.entries.set(key, { kind: 'opening', promise });
    return promise;
  }

  close(): void {
    for (const entry of this.entries.values()) {
      if (entry.kind === 'h2') entry.session.destroy();
    }
    this.entries.clear();
  }

  private open(origin: OriginKey): Promise<ClientHttp2Session | null> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: origin.host,
        port: origin.port,
        servername: origin.servername,
        ALPNProtocols: ['h2', 'http/1.1'],
        ...(this.secureContext ? { secureContext: this.secureContext } : {}),
        lookup: this.lookupFor(origin.port),
      });
      socket.setTimeout(CONNECT_TIMEOUT_MS, () =>
        socket.destroy(new Error('timed out connecting to the origin')),
      );
      socket.once('error', reject);
      socket.once('secureConnect', () => {
        socket.setTimeout(0);
        socket.off('error', reject);
        if (socket.alpnProtocol !== 'h2') {
          socket.end();
          resolve(null);
          return;
        }
        const authority = `https://${origin.host.includes(':') ? `[${origin.host}]` : origin.host}:${origin.port}`;
        const session = http2.connect(authority, { createConnection: () => socket });
        session.once('error', () => undefined);
        // Idle sessions do not keep the proxy's event loop alive.
        session.unref();
        resolve(session);
      });
    });
  }
}
