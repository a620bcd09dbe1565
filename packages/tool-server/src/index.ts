// The tool server package: start it in-process (the local stack, tests) or run src/cli.ts.
export {
  DEFAULT_ADB_PATH,
  DEFAULT_ADB_SERVER_PORT,
  type ToolServerConfigInput,
} from './config.ts';
export type { AdbDevice } from './farm/android/adb-device-list.ts';
export {
  AndroidSetupError,
  type AndroidSetupErrorCode,
} from './farm/android/android-setup-error.ts';
export {
  describeTraffic,
  type PhoneProxyConnection,
  pointPhoneAtProxy,
  revertPhoneProxy,
} from './farm/android/phone-proxy-over-usb.ts';
export { type RunningToolServer, startToolServer } from './tool-server.ts';
