// Postgres notifications the proxy acts on (issue 19): a resumed breakpoint, changed breakpoint
// settings, a device port allocated, moved or freed anywhere. One connection LISTENs on every
// channel (never polling per request); when it drops it is re-opened after a second and the
// owners reload their whole state (`onConnected`), so a notification missed meanwhile costs at
// most that reload.
import type pg from 'pg';
import type { Logger } from 'pino';

export type NotificationHandler = (payload: string) => void;

export class DatabaseEvents {
  private readonly pool: pg.Pool;
  private readonly logger: Logger;
  private readonly handlers = new Map<string, NotificationHandler[]>();
  private readonly connectedHandlers: Array<() => void> = [];
  private client: pg.PoolClient | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private connectedBefore = false;

  constructor(pool: pg.Pool, logger: Logger) {
    this.pool = pool;
    this.logger = logger;
  }

  /** Registers a channel's handler; call before start(). */
  on(channel: string, handler: NotificationHandler): void {
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
  }

  /**
   * Runs after every re-connection, when notifications may have been missed (not after the first:
   * the owners load their state at start, and nothing should still be running once start is
   * done; a caller that blocks its event loop next, as the pgTAP runner does, would otherwise
   * hold an open transaction and the locks it took).
   */
  onConnected(handler: () => void): void {
    this.connectedHandlers.push(handler);
  }

  /** Connects and listens; a first failure is retried in the background, not thrown. */
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
      if (this.connectedBefore) {
        for (const handler of this.connectedHandlers) handler();
      }
      this.connectedBefore = true;
    } catch (error) {
      client?.release(true);
      // Whatever happens meanwhile is missed: the connection that follows reloads.
      this.connectedBefore = true;
      this.logger.warn({ err: error }, 'cannot listen for database notifications; retrying');
      this.schedule();
    }
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
