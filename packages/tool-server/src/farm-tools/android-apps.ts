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
import { callerPackageObject } from './storage-object.ts';
import { RELATIVE_OBJECT_PATH } from './storage-upload.ts';

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
      .describe('Where it was fetched from (after redirects); null for an upload or an object.'),
    object: z
      .object({ bucket: z.string(), path: z.string() })
      .nullable()
      .describe('The Storage object it was read from (as you); null otherwise.'),
    bytes: z.number().int(),
    sha256: z.string().describe('SHA-256 (hex) of the bytes installed.'),
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

const ApkObject = z
  .object({
    bucket: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/, 'a bucket id, e.g. farm-apps')
      .describe('The Storage bucket, e.g. farm-apps.'),
    path: z
      .string()
      .min(1)
      .max(1024)
      .regex(RELATIVE_OBJECT_PATH, 'an object path without empty, . or .. segments')
      .describe('The object path inside the bucket, e.g. <your user id>/app.apk.'),
    sha256: z
      .string()
      .regex(/^[0-9A-Fa-f]{64}$/, 'a SHA-256 in hex')
      .optional()
      .describe('The SHA-256 (hex) the object must have; the install refuses other bytes.'),
  })
  .strict();

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
    'apk_base64 (an upload, under 3 MiB; larger APKs go by URL) or from apk_object (a Supabase ' +
    'Storage object, e.g. bucket farm-apps, path <your user id>/app.apk, read as you: only ' +
    'what you may read; give its sha256 to pin the bytes the person approves). Give exactly ' +
    'one. The package name, versionCode and versionName are ' +
    "read from the APK before installing; answers them and the device's outcome. Runs only " +
    'once a person approves it (in the dashboard, or in your client when it asks them).',
  input: z.object({
    device_uuid: deviceUuid,
    apk_url: z.string().max(4096).optional().describe('Where to fetch the APK (http or https).'),
    apk_base64: z
      .string()
      .max(MAX_UPLOAD_BASE64_CHARS)
      .optional()
      .describe('The APK itself, standard base64. Give this, apk_url or apk_object.'),
    apk_object: ApkObject.optional().describe(
      'A Supabase Storage object holding the APK, read with your own token after approval.',
    ),
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
  refuse(call, args) {
    if (args.apk_object !== undefined && !call.storage) {
      return new ToolError(
        'unavailable',
        'This server cannot read Storage objects (no anon key configured); use apk_url or apk_base64.',
      );
    }
    return null;
  },
  confirm(args) {
    const request = { url: args.apk_url, base64: args.apk_base64, object: args.apk_object };
    // Arguments that cannot run are refused by run() at once; there is nothing to confirm.
    if (packageSourceProblem(request, 'apk')) return null;
    return (
      `Install ${describeSource(args)} on farm Android device ${args.device_uuid} with adb install` +
      `${args.replace ? ' -r (replacing an installed version)' : ''}.`
    );
  },
  async run(call, args) {
    const { apk_object: object } = args;
    // refuse() answered already when there is no Storage; this keeps the types honest.
    if (object !== undefined && !call.storage) {
      throw new ToolError('unavailable', 'This server cannot read Storage objects.');
    }
    return androidOf(call).install(
      call,
      {
        deviceUuid: args.device_uuid,
        url: args.apk_url,
        base64: args.apk_base64,
        // Read as the caller (their token, the anon key) once the farm runs the approved call.
        object: object && call.storage ? callerPackageObject(call.storage, object) : undefined,
        replace: args.replace,
      },
      call.approval,
    );
  },
});

/**
 * What the person approves, from the arguments alone (confirm is synchronous): the URL, the
 * upload's hash, or the object's bucket, path and pinned sha256, or that its content is not pinned.
 */
function describeSource(args: {
  apk_url?: string | undefined;
  apk_base64?: string | undefined;
  apk_object?: z.output<typeof ApkObject> | undefined;
}): string {
  if (args.apk_url !== undefined) {
    return `the APK at ${shownText(args.apk_url)} (fetched through the capture proxy)`;
  }
  if (args.apk_object !== undefined) {
    const { bucket, path, sha256 } = args.apk_object;
    const where = `the APK in Storage bucket ${shownText(bucket)} at ${shownText(path)} (read as you)`;
    return sha256 !== undefined
      ? `${where}, only if its sha256 is ${sha256.toLowerCase()}`
      : `${where}; its content is not pinned (no sha256): whatever the object holds when it runs`;
  }
  return `the uploaded APK (sha256 ${createHash('sha256')
    .update(Buffer.from(args.apk_base64 ?? '', 'base64'))
    .digest('hex')})`;
}

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
