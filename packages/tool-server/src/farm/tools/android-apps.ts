// The Android members of the `_install_app` family (001 §4.1, docs/farm.md "Android devices"):
// android_install_app, android_list_packages and android_uninstall_app on a farm Android device
// chosen by our device uuid. They declare arguments and wording only; app-family.ts does the work
// with the farm's Android AppInstaller (adb). Install and uninstall change a device: confirm-gated.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineTool } from '../../mcp/tool-definition.ts';
import { ANDROID_PACKAGE_NAME } from '../android/apk-badging.ts';
import {
  InstallOutput,
  installApp,
  ListOutput,
  listApps,
  MAX_UPLOAD_BASE64_CHARS,
  packageSourceProblem,
  UninstallOutput,
  uninstallApp,
} from '../apps/app-family.ts';
import { shownText } from '../confirmations.ts';
import type { Farm } from '../farm.ts';

const android = (farm: Farm) => farm.android;
const deviceUuid = z
  .string()
  .uuid()
  .describe('The farm Android device, by our device uuid (list_devices shows yours).');

export const androidInstallApp = defineTool({
  name: 'android_install_app',
  title: 'Install an Android app on a farm device',
  description:
    'Installs an APK on a farm Android device through adb: from apk_url (http/https, fetched ' +
    'through the capture proxy, so the download is captured under your farm device) or from ' +
    'apk_base64 (an upload, under 3 MiB; larger APKs go by URL). The package name, versionCode and versionName are ' +
    "read from the APK before installing; answers them and the device's outcome. Runs only " +
    'once a person approves it (in the dashboard, or in your client when it asks them).',
  input: z.object({
    device_uuid: deviceUuid,
    apk_url: z.string().max(4096).optional().describe('Where to fetch the APK (http or https).'),
    apk_base64: z
      .string()
      .max(MAX_UPLOAD_BASE64_CHARS)
      .optional()
      .describe('The APK itself, standard base64. Give this or apk_url.'),
    replace: z
      .boolean()
      .default(false)
      .describe('Replace the package if it is installed already (adb install -r).'),
  }),
  output: InstallOutput,
  annotations: {
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: true,
  },
  requires: { section: 'farm', action: 'edit' },
  farm: true,
  confirm(args) {
    const request = {
      deviceUuid: args.device_uuid,
      url: args.apk_url,
      base64: args.apk_base64,
      replace: args.replace,
    };
    // Arguments that cannot run are refused by run() at once; there is nothing to confirm.
    if (packageSourceProblem(request, 'apk')) return null;
    const what =
      args.apk_url !== undefined
        ? `the APK at ${shownText(args.apk_url)} (fetched through the capture proxy)`
        : `the uploaded APK (sha256 ${createHash('sha256')
            .update(Buffer.from(args.apk_base64 ?? '', 'base64'))
            .digest('hex')})`;
    return (
      `Install ${what} on farm Android device ${args.device_uuid} with adb install` +
      `${args.replace ? ' -r (replacing an installed version)' : ''}.`
    );
  },
  run(call, args) {
    return installApp(
      call,
      android,
      {
        deviceUuid: args.device_uuid,
        url: args.apk_url,
        base64: args.apk_base64,
        replace: args.replace,
      },
      'apk',
    );
  },
});

export const androidListPackages = defineTool({
  name: 'android_list_packages',
  title: 'List the apps on a farm Android device',
  description:
    'Lists the package names installed on a farm Android device (adb shell pm list packages): ' +
    'third-party apps by default, every package with filter all. Read-only.',
  input: z.object({
    device_uuid: deviceUuid,
    filter: z
      .enum(['third_party', 'all'])
      .default('third_party')
      .describe(
        'third_party: apps installed by a user (pm list packages -3); all: system ones too.',
      ),
  }),
  output: ListOutput,
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  // Read-only, but like every farm tool it needs farm:edit (docs/farm.md "Who may use it").
  requires: { section: 'farm', action: 'edit' },
  farm: true,
  run(call, args) {
    return listApps(call, android, args.device_uuid, args.filter);
  },
});

export const androidUninstallApp = defineTool({
  name: 'android_uninstall_app',
  title: 'Uninstall an Android app from a farm device',
  description:
    'Uninstalls a package (with its data) from a farm Android device through adb uninstall. ' +
    'Runs only once a person approves it (in the dashboard, or in your client when it asks them).',
  input: z.object({
    device_uuid: deviceUuid,
    package: z
      .string()
      .max(255)
      .regex(ANDROID_PACKAGE_NAME, 'an Android package name, e.g. com.example.app')
      .describe('The package name, as android_list_packages shows it.'),
  }),
  output: UninstallOutput,
  annotations: {
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false,
  },
  requires: { section: 'farm', action: 'edit' },
  farm: true,
  confirm(args) {
    return `Uninstall ${args.package} (and its data) from farm Android device ${args.device_uuid} with adb uninstall.`;
  },
  run(call, args) {
    return uninstallApp(call, android, args.device_uuid, args.package);
  },
});
