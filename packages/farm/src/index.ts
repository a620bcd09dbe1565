// The farm package (docs/farm.md): its security boundary, Farm (farm.ts), built by startFarm from
// its settings; the error type it answers with; what the farm tools' MCP declarations share with
// it (argument limits, how what would run is shown); and the Android-over-USB set-up that the
// dashboard's routes and the stack's CLI drive on this machine's adb (docs/devices.md).
export type { ActingCaller, FarmCaller } from './acting-caller.ts';
export { ADB_SERIAL, type AdbDevice } from './android/adb-device-list.ts';
export { AndroidSetupError, type AndroidSetupErrorCode } from './android/android-setup-error.ts';
export { ANDROID_PACKAGE_NAME } from './android/apk-badging.ts';
export {
  describeTraffic,
  listAttachedPhones,
  type PhoneAdb,
  type PhoneProxyConnection,
  type PhoneProxyRoute,
  pointPhoneAtProxy,
  revertPhoneProxy,
} from './android/phone-proxy-over-usb.ts';
export type { Approval, Elicitation, GateVerdict } from './approval-gate.ts';
export {
  type FarmApps,
  type InstallReport,
  type InstallRequest,
  MAX_UPLOAD_BASE64_CHARS,
  type PackageList,
  packageSourceProblem,
  type UninstallReport,
} from './apps/app-family.ts';
export type { AppPackageFilter } from './apps/app-installer.ts';
export type { PackageFile, PackageObject } from './apps/package-file.ts';
export {
  BROWSER_ACTIONS,
  BROWSER_DEFAULT_MAX_CHARS,
  type BrowserAction,
  type BrowserAnswer,
  type BrowserRequest,
} from './browser/browser-actions.ts';
export { farmHostOf, shownText } from './confirmations.ts';
export type { Farm } from './farm.ts';
export type { FarmCall, FarmCallRequest, GateRequest, Redact, RunOutcome } from './farm-call.ts';
export {
  DEFAULT_ADB_PATH,
  DEFAULT_ADB_SERVER_PORT,
  type FarmConfig,
  FarmConfigSchema,
} from './farm-config.ts';
export type { FarmDatabase } from './farm-database.ts';
export { FarmError, type FarmErrorCode } from './farm-error.ts';
export type { PendingAction } from './pending-actions.ts';
export type { ShellCommand, ShellRun } from './shell/run-shell.ts';
export { type FarmOptions, startFarm } from './start-farm.ts';
