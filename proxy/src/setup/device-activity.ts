// What this proxy has seen of each device lately, for the set-up page's live check
// (docs/devices.md): "we see this device" as soon as a request from it arrives, over which kind of
// connection, and what is missing when a request fails for lack of trust in the CA (the client
// refused our leaf). Fed by every capture the proxy delivers and by the set-up page's own requests
// through a device port; kept in memory for the devices someone is watching or saw lately, so a
// daemon holds no more than a few entries per device being set up. A deployment with several proxy
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

interface CapturePayload {
  attribution?: { rule?: string; device_uuid?: string | null };
  tls?: { intercepted?: boolean; sni?: string | null; handshakeError?: string };
  host?: string;
}

export class DeviceActivity {
  private readonly states = new Map<string, DeviceSetupStatus>();
  private readonly changes = new EventEmitter().setMaxListeners(0);

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

  private update(device: string, change: Partial<DeviceSetupStatus>): void {
    const next = { ...this.status(device), ...change };
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
