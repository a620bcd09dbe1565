// Builds the farm of this tool server from its settings (docs/farm.md): the gating state (and the
// dashboard page where a person approves), the farm's devices on the capture proxy, and the parts
// the farm tools drive. close() ends every sandbox, browser and adb session it started (server
// shutdown).
import type { Logger } from 'pino';
import type { FarmConfig } from '../config.ts';
import type { Database } from '../store/database.ts';
import { AndroidFarm } from './android/android-farm.ts';
import { FarmAudit } from './audit.ts';
import { BrowserSessions } from './browser/browser-sessions.ts';
import type { Farm } from './farm.ts';
import { ProxyFarmDevices } from './farm-devices.ts';
import { FarmPendingActions } from './pending-actions.ts';
import { ShellSandbox } from './shell/shell-sandbox.ts';

export interface RunningFarm extends Farm {
  close(): Promise<void>;
}

export function startFarm(
  config: FarmConfig,
  db: Database,
  logger: Logger,
  options: { dashboardUrl: string },
): RunningFarm {
  const farmLogger = logger.child({ component: 'farm' });
  const shell = new ShellSandbox(config, farmLogger);
  const android = new AndroidFarm({
    adbPath: config.adbPath,
    aaptPath: config.aaptPath,
    adbServerPort: config.adbServerPort,
    commandTimeoutMs: config.android.commandTimeoutMs,
    installTimeoutMs: config.android.installTimeoutMs,
    // aapt parses the caller's APK: in bubblewrap, as the uid after the shell sandboxes' own.
    aaptSandbox: {
      bwrapPath: config.bwrapPath,
      uid: config.shell.sandboxUidBase + config.shell.maxConcurrent,
    },
  });
  const devices = new ProxyFarmDevices(config, db, farmLogger);
  const browsers = new BrowserSessions(config, db, devices, farmLogger);
  return {
    config,
    devices,
    pendingActions: new FarmPendingActions(db, config.confirmationTtlSeconds),
    approvalsUrl: `${options.dashboardUrl}/approvals`,
    audit: new FarmAudit(db),
    shell,
    browsers,
    android,
    async close() {
      await Promise.all([shell.close(), browsers.closeAll(), android.close()]);
    },
  };
}
