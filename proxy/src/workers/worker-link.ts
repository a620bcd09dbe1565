// A worker process's side of the channel to its primary (docs/proxy.md "Worker processes"), for
// what lives in memory and must be the same in every worker: the set-up pages' device activity,
// the hosts a client refused our certificate for, and the bindings /allocate and set-up links
// make, each sent to the siblings as it happens and taken from them; the capture counts, reported
// every second and summed over every worker for /health; and the primary's order to stop.
import type { CaptureWriter } from '../capture/capture-writer.ts';
import type { LearnedDevice } from '../devices/device-registry.ts';
import type { WorkerCaptures, WorkerShare } from '../proxy-options.ts';
import { DeviceActivity } from '../setup/device-activity.ts';
import type { PassthroughPolicy } from '../tls/passthrough-policy.ts';
import {
  type FromPrimary,
  type FromWorker,
  isProxyMessage,
  type WorkerCaptureStats,
} from './messages.ts';

const REPORT_EVERY_MS = 1_000;
/** A binding not confirmed by every sibling by then is left to the database's notification. */
const SHARE_TIMEOUT_MS = 1_000;

export class WorkerLink implements WorkerShare {
  readonly index: number;
  readonly count: number;
  readonly activity: DeviceActivity;
  private writer: CaptureWriter | undefined;
  private siblings: WorkerCaptureStats[] = [];
  private reporter: NodeJS.Timeout | undefined;
  private readonly stopHandlers: Array<() => void> = [];
  private passthrough: PassthroughPolicy | undefined;
  private readonly deviceHandlers: Array<(learned: LearnedDevice) => void> = [];
  private readonly sharing = new Map<number, () => void>();
  private nextShareId = 1;

  constructor(index: number, count: number) {
    this.index = index;
    this.count = count;
    this.activity = new DeviceActivity((device, status) =>
      this.send({ kind: 'activity', device, status }),
    );
    process.on('message', (message: unknown) => {
      if (isProxyMessage<FromPrimary>(message)) this.receive(message);
    });
  }

  /** Starts reporting this worker's capture counts. */
  reportCaptures(writer: CaptureWriter): void {
    this.writer = writer;
    this.report();
    this.reporter = setInterval(() => this.report(), REPORT_EVERY_MS);
    this.reporter.unref();
  }

  ready(port: number, managementPort: number | undefined): void {
    this.send({ kind: 'ready', port, managementPort });
  }

  /** This worker cannot start; resolves once the primary has the reason. */
  static failed(message: string): Promise<void> {
    return new Promise((resolve) => {
      if (!process.connected || !process.send) resolve();
      else
        process.send({ kind: 'failed', message } satisfies FromWorker, undefined, {}, () =>
          resolve(),
        );
    });
  }

  /** Pairs learned here go to the siblings; theirs are adopted here. */
  sharePassthrough(passthrough: PassthroughPolicy): void {
    this.passthrough = passthrough;
    passthrough.relayTo((learned) => this.send({ kind: 'passthrough', learned }));
  }

  /** Resolves once every sibling has it (or after SHARE_TIMEOUT_MS: the database tells them too). */
  shareDevice(learned: LearnedDevice): Promise<void> {
    const id = this.nextShareId++;
    return new Promise((resolve) => {
      const timeout = setTimeout(() => this.settleShare(id), SHARE_TIMEOUT_MS);
      this.sharing.set(id, () => {
        clearTimeout(timeout);
        resolve();
      });
      this.send({ kind: 'device', id, learned });
    });
  }

  onSiblingDevice(handler: (learned: LearnedDevice) => void): void {
    this.deviceHandlers.push(handler);
  }

  onStop(handler: () => void): void {
    this.stopHandlers.push(handler);
  }

  close(): void {
    if (this.reporter) clearInterval(this.reporter);
  }

  /** Every worker's latest counts, this one's as of now, and their sum. */
  captures(): WorkerCaptures {
    const own = this.ownStats();
    const workers = [
      ...this.siblings.filter((stats) => stats.index !== this.index),
      ...(own ? [own] : []),
    ].sort((a, b) => a.index - b.index);
    const total = {
      queued: 0,
      spooled: 0,
      written: 0,
      rejected: 0,
      databaseUp: workers.length > 0,
    };
    for (const stats of workers) {
      total.queued += stats.queued;
      total.spooled += stats.spooled;
      total.written += stats.written;
      total.rejected += stats.rejected;
      total.databaseUp &&= stats.databaseUp;
    }
    return { total, workers };
  }

  private ownStats(): WorkerCaptureStats | undefined {
    if (!this.writer) return undefined;
    return {
      ...this.writer.stats(),
      index: this.index,
      pid: process.pid,
      at: new Date().toISOString(),
    };
  }

  private report(): void {
    const stats = this.ownStats();
    if (stats) this.send({ kind: 'captures', stats });
  }

  private receive(message: FromPrimary): void {
    switch (message.kind) {
      case 'activity':
        this.activity.adopt(message.device, message.status);
        return;
      case 'passthrough':
        this.passthrough?.adopt(message.learned);
        return;
      case 'device':
        for (const handler of this.deviceHandlers) handler(message.learned);
        this.send({ kind: 'device-applied', id: message.id });
        return;
      case 'device-shared':
        this.settleShare(message.id);
        return;
      case 'captures':
        this.siblings = message.workers;
        return;
      case 'stop':
        for (const handler of this.stopHandlers) handler();
    }
  }

  private settleShare(id: number): void {
    this.sharing.get(id)?.();
    this.sharing.delete(id);
  }

  /** A closed channel (the primary is gone) drops the message: the worker is about to exit. */
  private send(message: FromWorker): void {
    if (process.connected) process.send?.(message, undefined, {}, () => undefined);
  }
}
