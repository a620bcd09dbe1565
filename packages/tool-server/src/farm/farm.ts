// The farm (docs/farm.md): the hosts that run sandboxed shells, headless browsers and attached
// Android devices for the farm tools. Locally it is the machine the tool server runs on. This is
// what the farm tools may use; each part lives in its own module.
import type { FarmConfig } from '../config.ts';
import type { ToolCall } from '../mcp/tool-definition.ts';
import type { AppInstaller } from './apps/app-installer.ts';
import type { FarmAudit } from './audit.ts';
import type { BrowserSessions } from './browser/browser-sessions.ts';
import type { FarmPendingActions } from './pending-actions.ts';
import type { ShellSandbox } from './shell/shell-sandbox.ts';

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
  egressFor(call: ToolCall, source: FarmCaptureSource): Promise<FarmEgress>;
}

export interface Farm {
  config: FarmConfig;
  devices: FarmDevices;
  /** Destructive calls awaiting a person (docs/farm.md "Gating"). */
  pendingActions: FarmPendingActions;
  /** The dashboard page where a person approves or denies them (`{dashboard_url}/approvals`). */
  approvalsUrl: string;
  audit: FarmAudit;
  shell: ShellSandbox;
  /** browser_cdp's sandboxed Chromium sessions on this host (docs/farm.md "Browser"). */
  browsers: BrowserSessions;
  /** This host's Android devices over adb (the `_install_app` family, docs/farm.md). */
  android: AppInstaller;
}
