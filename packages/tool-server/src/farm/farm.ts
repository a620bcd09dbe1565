// The farm (docs/farm.md): the hosts that run sandboxed shells, headless browsers and attached
// Android devices for the farm tools. Locally it is the machine the tool server runs on. This is
// what the farm tools may use; each part lives in its own module.
import type { FarmConfig } from '../config.ts';
import type { AppInstaller } from './apps/app-installer.ts';
import type { FarmAudit } from './audit.ts';
import type { BrowserSessions } from './browser/browser-sessions.ts';
import type { FarmDevices } from './farm-egress.ts';
import type { FarmPendingActions } from './pending-actions.ts';
import type { ShellSandbox } from './shell/shell-sandbox.ts';

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
