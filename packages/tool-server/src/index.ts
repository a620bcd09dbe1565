// The tool server package: start it in-process (the local stack, tests) or run src/cli.ts.
// The Android-over-USB set-up and the adb defaults are the farm package's (@capture/farm), named
// here too for the stack's CLI, which reaches them through this package.
export {
  type AdbDevice,
  AndroidSetupError,
  type AndroidSetupErrorCode,
  DEFAULT_ADB_PATH,
  DEFAULT_ADB_SERVER_PORT,
  describeTraffic,
  type PhoneProxyConnection,
  pointPhoneAtProxy,
  revertPhoneProxy,
} from '@capture/farm';
export type { ToolServerConfigInput } from './config.ts';
export { type RunningToolServer, startToolServer } from './tool-server.ts';
