// The Android members of the `_install_app` family (001 §4.1, docs/farm.md "Android devices") as
// MCP declares them: android_install_app, android_list_packages and android_uninstall_app on a
// farm Android device chosen by our device uuid. They declare arguments, answers and wording only;
// the farm's Android family does the work (adb). Install and uninstall change a device:
// confirm-gated.
import { createHash } from 'node:crypto';
import {
  ANDROID_PACKAGE_NAME,
  type Farm,
  MAX_UPLOAD_BASE64_CHARS,
  packageSourceProblem,
  shownText,
} from '@capture/farm';
import { z } from 'zod';
import { defineTool, type ToolCall } from '../mcp/tool-definition.ts';
import { ToolError } from '../mcp/tool-error.ts';

const FarmDeviceOutput = {
  device_uuid: z.string(),
  device_name: z.string(),
  serial: z.string().describe('How the farm host addresses the device (adb serial).'),
};

const InstallOutput = z.object({
  ...FarmDeviceOutput,
  package: z.string(),
  version_code: z.string().nullable(),
  version_name: z.string().nullable(),
  outcome: z.string().describe("The device's answer: Success."),
  replace: z.boolean(),
  source: z.object({
    url: z
      .string()
      .nullable()
      .describe('Where it was fetched from (after redirects); null for an upload.'),
    bytes: z.number().int(),
    sha256: z.string(),
  }),
  captured_under_device_uuid: z
    .string()
    .nullable()
    .describe('The farm device whose proxy port fetched the URL (its entries hold the download).'),
});

const ListOutput = z.object({
  ...FarmDeviceOutput,
  filter: z.enum(['third_party', 'all']),
  packages: z.array(z.string()),
});

const UninstallOutput = z.object({
  ...FarmDeviceOutput,
  package: z.string(),
  outcome: z.string(),
});

/** The farm's Android family, or unavailable where this server has no farm devices. */
function androidOf(call: ToolCall): Farm['android'] {
  if (!call.farm) throw new ToolError('unavailable', 'This server has no farm devices.');
  return call.farm.android;
}

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
  async run(call, args) {
    return androidOf(call).install(
      call,
      {
        deviceUuid: args.device_uuid,
        url: args.apk_url,
        base64: args.apk_base64,
        replace: args.replace,
      },
      call.approval,
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
  async run(call, args) {
    return androidOf(call).list(call, args.device_uuid, args.filter);
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
  async run(call, args) {
    return androidOf(call).uninstall(call, args.device_uuid, args.package, call.approval);
  },
});
