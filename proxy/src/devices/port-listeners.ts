// Device ports follow the database (002 §2.3, §4.4; docs/proxy.md "Devices, ports and PAC"):
// every allocated port listens from the start (a restart keeps ports), ports another daemon
// allocated or a device inserted over REST open here too, and ports of deleted devices stop
// listening. The map is re-read on a port-change NOTIFY (one read per burst), whenever the change
// feed connects, and on an interval as a fallback.
import type { Logger } from 'pino';
import type { DatabaseEvents } from '../database-events.ts';
import type { ListenerSet } from '../listeners.ts';
import type { DeviceRegistry } from './device-registry.ts';

export class DevicePortListeners {
  private readonly registry: DeviceRegistry;
  private readonly listeners: ListenerSet;
  private readonly events: DatabaseEvents | undefined;
  private readonly refreshIntervalMs: number;
  private readonly logger: Logger;
  private refresher: NodeJS.Timeout | undefined;
  private resyncSoon: NodeJS.Timeout | undefined;
  private resyncLater: NodeJS.Timeout | undefined;

  constructor(options: {
    registry: DeviceRegistry;
    listeners: ListenerSet;
    events: DatabaseEvents | undefined;
    /** How often the port map is re-read without a notification (default 30 s). */
    refreshIntervalMs?: number;
    logger: Logger;
  }) {
    this.registry = options.registry;
    this.listeners = options.listeners;
    this.events = options.events;
    this.refreshIntervalMs = options.refreshIntervalMs ?? 30_000;
    this.logger = options.logger;
  }

  /** Every port the registry holds, opened one by one; a port that cannot open is skipped. */
  async openAllocated(): Promise<void> {
    for (const port of this.registry.ports) {
      await this.listeners.ensure(port).catch(() => undefined);
    }
  }

  /** Re-reads on the interval and on the change feed (subscribed before the feed starts). */
  follow(): void {
    this.refresher = setInterval(this.resync, this.refreshIntervalMs);
    this.refresher.unref();
    // A port allocated, moved or freed anywhere (/allocate on any daemon, a device inserted over
    // REST) opens or closes here within a second: one NOTIFY, then one re-read shared by a burst.
    this.events?.on('proxy_device_ports_changed', () => {
      this.resyncSoon ??= setTimeout(() => {
        this.resyncSoon = undefined;
        void this.resync();
      }, 50);
    });
    this.events?.onConnected(this.resync);
  }

  stop(): void {
    if (this.refresher) clearInterval(this.refresher);
    if (this.resyncSoon) clearTimeout(this.resyncSoon);
    if (this.resyncLater) clearTimeout(this.resyncLater);
  }

  private readonly resync = async (): Promise<void> => {
    await this.sync().then(
      () => {
        // A port allocated here in the last second is kept against the read: read again once
        // that second is over, so a change that raced the allocation is not missed.
        if (this.registry.settling && !this.resyncLater) {
          this.resyncLater = setTimeout(() => {
            this.resyncLater = undefined;
            void this.resync();
          }, 1100);
          this.resyncLater.unref();
        }
      },
      (error: unknown) => this.logger.warn({ err: error }, 'device refresh failed'),
    );
  };

  /** Ports another daemon allocated open here too; ports of deleted devices stop listening. */
  private async sync(): Promise<void> {
    await this.registry.refresh();
    const allocated = new Set(this.registry.ports);
    for (const port of this.listeners.ports) if (!allocated.has(port)) this.listeners.close(port);
    await Promise.all(
      this.registry.ports.map((port) => this.listeners.ensure(port).catch(() => undefined)),
    );
  }
}
