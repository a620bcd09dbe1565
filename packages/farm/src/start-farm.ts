// Builds the farm of this host from its settings (docs/farm.md): the gating state (and the
// dashboard page where a person approves), the audit, the farm's devices on the capture proxy,
// and the sandboxes, browsers and adb the farm tools drive. close() ends every sandbox, browser
// and adb run it started (server shutdown).
import type { Logger } from 'pino';
import { AndroidFarm } from './android/android-farm.ts';
import { appFamily } from './apps/app-family.ts';
import { FarmAudit } from './audit.ts';
import { browse } from './browser/browser-actions.ts';
import { BrowserSessions } from './browser/browser-sessions.ts';
import type { Farm } from './farm.ts';
import { FarmCall, type Redact } from './farm-call.ts';
import type { FarmConfig } from './farm-config.ts';
import type { FarmDatabase } from './farm-database.ts';
import { ProxyFarmDevices } from './farm-devices.ts';
import { FarmPendingActions } from './pending-actions.ts';
import { runShellCommand } from './shell/run-shell.ts';
import { ShellSandbox } from './shell/shell-sandbox.ts';

export interface FarmOptions {
  /** `{dashboard_url}`: its /approvals page is where a person decides. */
  dashboardUrl: string;
  /** The shared redaction module, as the audit applies it to arguments and outcomes. */
  redact: Redact;
}

export function startFarm(
  config: FarmConfig,
  db: FarmDatabase,
  logger: Logger,
  options: FarmOptions,
): Farm {
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
  const sessions = new BrowserSessions(config, db, devices, farmLogger);
  const callParts = {
    audit: new FarmAudit(db),
    pendingActions: new FarmPendingActions(db, config.confirmationTtlSeconds),
    redact: options.redact,
    logger: farmLogger,
  };
  return {
    hostName: config.hostName,
    approvalsUrl: `${options.dashboardUrl}/approvals`,
    openCall: (request) => FarmCall.open(callParts, request),
    runShell: (call, command, approval) =>
      runShellCommand({ config, devices, shell }, call, command, approval),
    browse: (call, request, approval) => browse({ config, sessions }, call, request, approval),
    android: appFamily({ config, devices, installer: android }),
    async close() {
      await Promise.all([shell.close(), sessions.closeAll(), android.close()]);
    },
  };
}
