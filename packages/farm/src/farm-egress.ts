// Where farm traffic leaves for the capture proxy (docs/farm.md "Farm devices"): the caller's farm
// device and its proxy port, which the sandboxes and the egress bridge send through.
import type { ActingCaller } from './acting-caller.ts';

/** How farm traffic is labelled in `entries.payload.source` (001 §2.2 device_status.source). */
export type FarmCaptureSource = 'farm' | 'cdp';

/** Where a farm client sends its traffic so the capture proxy records it under the caller. */
export interface FarmEgress {
  /** The caller's farm device the traffic is captured under. */
  deviceUuid: string;
  /** The device's dedicated proxy port, on `proxyHost`. */
  proxyHost: string;
  proxyPort: number;
  /** The project CA (PEM) the client must trust for intercepted HTTPS. */
  caCertificatePem: string;
}

export interface FarmDevices {
  /**
   * The caller's farm device for `source` (created on first use, as the caller, under RLS) and
   * its proxy port (allocated through the proxy's /allocate, so its listener is up).
   */
  egressFor(call: ActingCaller, source: FarmCaptureSource): Promise<FarmEgress>;
}
