// Postgres notifications the proxy acts on (docs/proxy.md "Breakpoints", "Devices, ports and PAC"):
// a resumed breakpoint, changed breakpoint settings, a device port allocated, moved or freed
// anywhere. One connection LISTENs on every channel (never polling per request). Whenever LISTEN
// starts, the first time included, the owners reload their whole state (`onConnected`): what
// changed between their own load and the LISTEN (at start: while the listeners opened; later: while
// the connection was down) is not heard, so it is read instead. When the connection drops it is
// re-opened after a second.
import type pg from 'pg';
import type { Logger } from 'pino';

export type NotificationHandler = (payload: string) => void;
/** Reloads an owner's state; settles when the reload is done (failures are the owner's to log). */
export type ConnectedHandler = () => Promise<void>;

export class DatabaseEvents {
  private readonly pool: pg.Pool;
  private readonly logger: Logger;
  private readonly handlers = new Map<string, NotificationHandler[]>();
  private readonly connectedHandlers: ConnectedHandler[] = [];
  private client: pg.PoolClient | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(pool: pg.Pool, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
  }

  /** Registers a channel's handler; call before start(). */
  on(channel: string, handler: NotificationHandler): void {
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
  }

  /** Runs once LISTEN is up, every time: notifications before it were not heard. */
  onConnected(handler: ConnectedHandler): void {
    this.connectedHandlers.push(handler);
  }

  /**
   * Connects, listens and waits for the owners' catch-up reloads, so nothing this started is
   * still running when start is done. A first failure is retried in the background, not thrown.
   */
  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('notification');
      client.release(true);
    }
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    let client: pg.PoolClient | undefined;
    try {
      client = await this.pool.connect();
      const listening = client;
      listening.on('notification', (message) => {
        for (const handler of this.handlers.get(message.channel) ?? []) {
          handler(message.payload ?? '');
        }
      });
      listening.on('error', (error) => this.lost(listening, error));
      listening.on('end', () => this.lost(listening, new Error('connection ended')));
      for (const channel of this.handlers.keys()) {
        await listening.query(`listen "${channel.replace(/"/g, '""')}"`);
      }
      if (this.stopped) {
        listening.release(true);
        return;
      }
      this.client = listening;
    } catch (error) {
      client?.release(true);
      // Whatever happens meanwhile is missed: the connection that follows reloads.
      this.logger.warn({ err: error }, 'cannot listen for database notifications; retrying');
      this.schedule();
      return;
    }
    await Promise.all(this.connectedHandlers.map((handler) => handler()));
  }

  private lost(client: pg.PoolClient, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.logger.warn({ err: error }, 'database notification connection lost; reconnecting');
    client.release(true);
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, 1000);
    this.retry.unref();
  }
}
