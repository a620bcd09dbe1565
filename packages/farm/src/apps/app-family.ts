// What the `_install_app` family does, for any platform's AppInstaller (docs/farm.md
// "Android devices", "The app family"): find the device as the caller (SQL decides who may use
// which device), bring the package file onto the host (a URL through the capture proxy, an
// upload, or a Storage object read as the caller), read its identity before installing, then install, list or uninstall. Installing and
// uninstalling change a device, so they run only once a person approved them. A platform's tool
// declarations only name their arguments and hand the request here.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActingCaller } from '../acting-caller.ts';
import { type Approval, requireApproval } from '../approval-gate.ts';
import type { FarmConfig } from '../farm-config.ts';
import type { FarmDevices } from '../farm-egress.ts';
import { FarmError } from '../farm-error.ts';
import {
  type AppIdentity,
  type AppInstaller,
  AppInstallerError,
  type AppPackageFilter,
  type AppTarget,
} from './app-installer.ts';
import {
  downloadPackage,
  type PackageFile,
  type PackageObject,
  parsePackageUrl,
  readPackageObject,
  writeUploadedPackage,
} from './package-file.ts';

/**
 * Uploads travel base64 inside one JSON-RPC body, which the MCP SDK's transport refuses over
 * 4 MiB (`Payload Too Large`): 3 MiB less 64 KiB of APK leaves room for the base64 growth (4/3)
 * and the envelope. Larger APKs go by URL.
 */
export const MAX_UPLOAD_BYTES = 3 * 1024 * 1024 - 64 * 1024;
export const MAX_UPLOAD_BASE64_CHARS = Math.ceil(MAX_UPLOAD_BYTES / 3) * 4 + 1024;

export interface FarmDevice {
  uuid: string;
  name: string;
  serial: string;
}

/** The device an answer is about, as the tools name it. */
export interface DeviceNamed {
  device_uuid: string;
  device_name: string;
  /** How the farm host addresses the device (adb serial). */
  serial: string;
}

export interface InstallReport extends DeviceNamed, AppIdentity {
  /** The device's answer: Success. */
  outcome: string;
  replace: boolean;
  source: PackageFile;
  /** The farm device whose proxy port fetched the URL (its entries hold the download). */
  captured_under_device_uuid: string | null;
}

export interface PackageList extends DeviceNamed {
  filter: AppPackageFilter;
  packages: string[];
}

export interface UninstallReport extends DeviceNamed {
  package: string;
  outcome: string;
}

export interface InstallRequest {
  deviceUuid: string;
  url: string | undefined;
  base64: string | undefined;
  /** A Storage object, read only after approval as the caller (docs/farm.md "Android devices"). */
  object: PackageObject | undefined;
  replace: boolean;
}

/** One platform's member of the family on this host (Android over adb; iOS would be another). */
export interface FarmApps {
  readonly platform: AppInstaller['platform'];
  install(
    call: ActingCaller,
    request: InstallRequest,
    approval: Approval | undefined,
  ): Promise<InstallReport>;
  list(call: ActingCaller, deviceUuid: string, filter: AppPackageFilter): Promise<PackageList>;
  uninstall(
    call: ActingCaller,
    deviceUuid: string,
    packageName: string,
    approval: Approval | undefined,
  ): Promise<UninstallReport>;
}

interface AppParts {
  config: FarmConfig;
  devices: FarmDevices;
  installer: AppInstaller;
}

/**
 * The device as the caller sees it (RLS on devices and farm_attached_devices): visible, attached
 * to this farm host, of this platform. Anything else is one answer, so nothing is learnt about
 * devices the caller may not see.
 */
async function findFarmDevice(
  call: ActingCaller,
  parts: AppParts,
  deviceUuid: string,
): Promise<FarmDevice> {
  const { config, installer } = parts;
  const rows = await call.asCaller(async (client) => {
    const { rows } = await client.query<FarmDevice & { os: string }>(
      `select d.uuid, d.name, d.os, a.serial
         from public.devices d
         join public.farm_attached_devices a on a.device_uuid = d.uuid
        where d.uuid = $1 and a.farm_host = $2`,
      [deviceUuid, config.hostName],
    );
    return rows;
  });
  const device = rows[0];
  if (!device || device.os !== installer.platform) {
    throw new FarmError(
      'not_found',
      `No ${installer.platform} device ${deviceUuid} of yours is attached to this farm host ` +
        `(${config.hostName}).`,
    );
  }
  return { uuid: device.uuid, name: device.name, serial: device.serial };
}

/** An installer's own failure as the farm error the model sees. */
function farmErrorOf(error: unknown): unknown {
  if (!(error instanceof AppInstallerError)) return error;
  const code = {
    bad_package: 'invalid_arguments',
    device_unavailable: 'unavailable',
    timeout: 'unavailable',
    tool_failed: 'failed',
  } as const;
  return new FarmError(code[error.code], error.message, { cause: error });
}

/**
 * Exactly one source, and a URL only over http(s) (nothing else is fetched through the proxy:
 * no file:, data:, ftp:); null when the request can run. `kind` names the arguments (`apk`).
 */
export function packageSourceProblem(
  request: Pick<InstallRequest, 'url' | 'base64'> & { object: unknown },
  kind: string,
): string | null {
  const given = [request.url, request.base64, request.object].filter((v) => v !== undefined);
  if (given.length !== 1) {
    return `Give exactly one of ${kind}_url, ${kind}_base64 and ${kind}_object.`;
  }
  if (request.url !== undefined && !parsePackageUrl(request.url)) {
    return `${kind}_url must be an http or https URL.`;
  }
  return null;
}

/** The arguments' prefix for a platform's package files: `apk` (later `ipa`). */
function packageKind(installer: AppInstaller): string {
  return installer.fileExtension.replace(/^\./, '');
}

async function installApp(
  call: ActingCaller,
  parts: AppParts,
  request: InstallRequest,
  approval: Approval | undefined,
): Promise<InstallReport> {
  const { config, installer } = parts;
  const problem = packageSourceProblem(request, packageKind(installer));
  if (problem) throw new FarmError('invalid_arguments', problem);
  requireApproval(approval, 'Installing an app');
  const device = await findFarmDevice(call, parts, request.deviceUuid);
  const directory = await mkdtemp(join(tmpdir(), 'farm-app-'));
  try {
    const file = join(directory, `package${installer.fileExtension}`);
    let source: PackageFile;
    let capturedUnder: string | null = null;
    if (request.url !== undefined) {
      // The download goes through the capture proxy on the caller's farm device: it is recorded
      // in entries (source farm) like anything else the farm fetches.
      const egress = await parts.devices.egressFor(call, 'farm');
      capturedUnder = egress.deviceUuid;
      source = await downloadPackage(parsePackageUrl(request.url) as URL, egress, file, {
        maxBytes: config.android.packageMaxBytes,
        timeoutMs: config.android.downloadTimeoutMs,
      });
    } else if (request.object !== undefined) {
      source = await readPackageObject(request.object, file, {
        maxBytes: config.android.packageMaxBytes,
        timeoutMs: config.android.downloadTimeoutMs,
      });
    } else {
      source = await writeUploadedPackage(request.base64 as string, file, MAX_UPLOAD_BYTES);
    }
    // The identity is read before anything reaches the device: a file that is not a package is
    // refused here, and the report names what was installed whatever the device says.
    const identity = await installer.inspect(file);
    const outcome = await installer.install(device, file, { replace: request.replace });
    if (!outcome.ok) {
      const hint =
        outcome.reason === 'INSTALL_FAILED_ALREADY_EXISTS'
          ? ' Pass replace: true to replace it.'
          : '';
      throw new FarmError(
        'failed',
        `Installing ${identity.package} ${identity.version_name ?? ''} (versionCode ` +
          `${identity.version_code ?? '?'}) on ${device.name} (${device.serial}) failed: ` +
          `${outcome.message}.${hint}`,
      );
    }
    return {
      device_uuid: device.uuid,
      device_name: device.name,
      serial: device.serial,
      ...identity,
      outcome: outcome.message,
      replace: request.replace,
      source,
      captured_under_device_uuid: capturedUnder,
    };
  } catch (error) {
    throw farmErrorOf(error);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

async function listApps(
  call: ActingCaller,
  parts: AppParts,
  deviceUuid: string,
  filter: AppPackageFilter,
): Promise<PackageList> {
  const device = await findFarmDevice(call, parts, deviceUuid);
  const packages = await parts.installer.listPackages(device, filter).catch((error: unknown) => {
    throw farmErrorOf(error);
  });
  return {
    device_uuid: device.uuid,
    device_name: device.name,
    serial: device.serial,
    filter,
    packages,
  };
}

async function uninstallApp(
  call: ActingCaller,
  parts: AppParts,
  deviceUuid: string,
  packageName: string,
  approval: Approval | undefined,
): Promise<UninstallReport> {
  requireApproval(approval, 'Uninstalling an app');
  const { installer } = parts;
  const device = await findFarmDevice(call, parts, deviceUuid);
  try {
    const outcome = await installer.uninstall(device, packageName);
    if (!outcome.ok) {
      // Android answers DELETE_FAILED_INTERNAL_ERROR for a package that is not there at all.
      const installed = await installer.listPackages(device as AppTarget, 'all');
      if (!installed.includes(packageName)) {
        throw new FarmError('not_found', `${packageName} is not installed on ${device.name}.`);
      }
      throw new FarmError(
        'failed',
        `Uninstalling ${packageName} from ${device.name} (${device.serial}) failed: ${outcome.message}.`,
      );
    }
    return {
      device_uuid: device.uuid,
      device_name: device.name,
      serial: device.serial,
      package: packageName,
      outcome: outcome.message,
    };
  } catch (error) {
    throw farmErrorOf(error);
  }
}

/** The family's operations for one platform's installer on this host. */
export function appFamily(parts: AppParts): FarmApps {
  return {
    platform: parts.installer.platform,
    install: (call, request, approval) => installApp(call, parts, request, approval),
    list: (call, deviceUuid, filter) => listApps(call, parts, deviceUuid, filter),
    uninstall: (call, deviceUuid, packageName, approval) =>
      uninstallApp(call, parts, deviceUuid, packageName, approval),
  };
}
