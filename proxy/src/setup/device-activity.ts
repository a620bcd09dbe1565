// What this proxy has seen of each device lately, for the set-up page's live check
// (docs/devices.md): "we see this device" as soon as a request from it arrives, over which kind of
// connection, and what is missing when a request fails for lack of trust in the CA (the client
// refused our leaf). Fed by every capture the proxy delivers and by the set-up page's own requests
// through a device port; kept in memory for the devices someone is watching or saw lately, so a
// daemon holds no more than a few entries per device being set up. The worker processes of one
// daemon share what they see (workers/worker-link.ts relays each change, throttled): the page and
// the phone's requests are rarely served by the same worker. A deployment with several proxy
// daemons sees on each page what the daemon serving it saw: a phone set up on the LAN uses one
// proxy.
import { EventEmitter } from 'node:events';
import type { Capture } from '../capture/capture.ts';
import type { SetupStatus } from './setup-page.ts';

/** The live check's state of one device: what the set-up page's event stream sends whole. */
export type DeviceSetupStatus = SetupStatus;
export type SetupConnection = NonNullable<SetupStatus['connection']>;

const NOTHING_SEEN: DeviceSetupStatus = {
  seen: false,
  lastSeenAt: null,
  connection: null,
  listener: null,
  caProblem: null,
};

/** Entries kept at most; the oldest go first (a device watched again starts from its captures). */
const MAX_DEVICES = 2_000;
/** A change that only moves `lastSeenAt` reaches sibling workers at most this often per device. */
const RELAY_SEEN_EVERY_MS = 1_000;

/** Where a worker sends its own changes, for its siblings to `adopt`. */
export type ActivityRelay = (device: string, status: DeviceSetupStatus) => void;

interface CapturePayload {
  attribution?: { rule?: string; device_uuid?: string | null };
  tls?: { intercepted?: boolean; sni?: string | null; handshakeError?: string };
  host?: string;
}

export class DeviceActivity {
  private readonly states = new Map<string, DeviceSetupStatus>();
  private readonly changes = new EventEmitter().setMaxListeners(0);
  private readonly relay: ActivityRelay | undefined;
  /** When each device's state was last relayed (only while a relay is set). */
  private readonly relayedAt = new Map<string, number>();

  constructor(relay?: ActivityRelay) {
    this.relay = relay;
  }

  /** A capture on its way to the database: who it came from and how. */
  observe(capture: Capture): void {
    const device = capture.device_uuid;
    if (!device) return;
    const payload = capture.payload as CapturePayload;
    const listener = payload.attribution?.rule === 'ip' ? 'shared-port' : 'device-port';
    const handshakeError = payload.tls?.handshakeError;
    if (capture.kind === 'error' && handshakeError) {
      this.update(device, {
        caProblem: {
          host: payload.tls?.sni ?? payload.host ?? 'an HTTPS site',
          at: capture.ts,
          reason: handshakeError,
        },
      });
      return;
    }
    this.noteRequest(device, connectionOf(capture, payload), listener, capture.ts);
  }

  /** A request from the device that is not captured (its own set-up page through its port). */
  noteRequest(
    device: string,
    connection: SetupConnection,
    listener: DeviceSetupStatus['listener'],
    at = new Date().toISOString(),
  ): void {
    // Decrypted HTTPS proves the CA is trusted now: an earlier refusal is no longer the news.
    const trusted = connection === 'https' ? { caProblem: null } : {};
    this.update(device, { seen: true, lastSeenAt: at, connection, listener, ...trusted });
  }

  status(device: string): DeviceSetupStatus {
    return this.states.get(device) ?? NOTHING_SEEN;
  }

  /** Calls `listener` with each new status of the device; returns the unsubscribe. */
  watch(device: string, listener: (status: DeviceSetupStatus) => void): () => void {
    this.changes.on(device, listener);
    return () => this.changes.off(device, listener);
  }

  /** A sibling worker's change: taken as it is, and not relayed again. */
  adopt(device: string, status: DeviceSetupStatus): void {
    this.store(device, status);
  }

  private update(device: string, change: Partial<DeviceSetupStatus>): void {
    const previous = this.status(device);
    const next = { ...previous, ...change };
    this.store(device, next);
    if (this.relay && this.worthRelaying(device, previous, next)) this.relay(device, next);
  }

  /** Every change but a newer `lastSeenAt` goes at once; that one at most once a second. */
  private worthRelaying(
    device: string,
    previous: DeviceSetupStatus,
    next: DeviceSetupStatus,
  ): boolean {
    const now = Date.now();
    const onlyLater =
      previous.seen === next.seen &&
      previous.connection === next.connection &&
      previous.listener === next.listener &&
      previous.caProblem === next.caProblem;
    if (onlyLater && now - (this.relayedAt.get(device) ?? 0) < RELAY_SEEN_EVERY_MS) return false;
    this.relayedAt.delete(device);
    this.relayedAt.set(device, now);
    if (this.relayedAt.size > MAX_DEVICES) {
      this.relayedAt.delete(this.relayedAt.keys().next().value as string);
    }
    return true;
  }

  private store(device: string, next: DeviceSetupStatus): void {
    this.states.delete(device);
    this.states.set(device, next);
    if (this.states.size > MAX_DEVICES) {
      const oldest = this.states.keys().next().value as string;
      this.states.delete(oldest);
    }
    this.changes.emit(device, next);
  }
}

function connectionOf(capture: Capture, payload: CapturePayload): SetupConnection {
  if (capture.kind === 'tunnel') return 'tunnel';
  if (capture.kind === 'websocket') return 'websocket';
  return payload.tls?.intercepted ? 'https' : 'http';
}
