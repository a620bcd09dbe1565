// What the `_install_app` family's tools do, for any platform's AppInstaller (docs/farm.md
// "Android devices", "The app family"): find the device as the caller (SQL decides who may use
// which device), bring the package file onto the host (a URL through the capture proxy, or an
// upload), read its identity before installing, then install, list or uninstall. A platform's
// tool file only declares its three tools and hands its installer here.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ToolCall } from '../../mcp/tool-definition.ts';
import { ToolError } from '../../mcp/tool-error.ts';
import type { Farm } from '../farm.ts';
import {
  type AppInstaller,
  AppInstallerError,
  type AppPackageFilter,
  type AppTarget,
} from './app-installer.ts';
import {
  downloadPackage,
  type PackageFile,
  parsePackageUrl,
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

export const FarmDeviceOutput = {
  device_uuid: z.string(),
  device_name: z.string(),
  serial: z.string().describe('How the farm host addresses the device (adb serial).'),
};

export const InstallOutput = z.object({
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

export const ListOutput = z.object({
  ...FarmDeviceOutput,
  filter: z.enum(['third_party', 'all']),
  packages: z.array(z.string()),
});

export const UninstallOutput = z.object({
  ...FarmDeviceOutput,
  package: z.string(),
  outcome: z.string(),
});

export function requireInstaller(call: ToolCall, pick: (farm: Farm) => AppInstaller | null) {
  const installer = call.farm ? pick(call.farm) : null;
  if (!call.farm || !installer)
    throw new ToolError('unavailable', 'This server has no farm devices.');
  return { farm: call.farm, installer };
}

/**
 * The device as the caller sees it (RLS on devices and farm_attached_devices): visible, attached
 * to this farm host, of this platform. Anything else is one answer, so nothing is learnt about
 * devices the caller may not see.
 */
export async function findFarmDevice(
  call: ToolCall,
  farm: Farm,
  installer: AppInstaller,
  deviceUuid: string,
): Promise<FarmDevice> {
  const rows = await call.asCaller(async (client) => {
    const { rows } = await client.query<FarmDevice & { os: string }>(
      `select d.uuid, d.name, d.os, a.serial
         from public.devices d
         join public.farm_attached_devices a on a.device_uuid = d.uuid
        where d.uuid = $1 and a.farm_host = $2`,
      [deviceUuid, farm.config.hostName],
    );
    return rows;
  });
  const device = rows[0];
  if (!device || device.os !== installer.platform) {
    throw new ToolError(
      'not_found',
      `No ${installer.platform} device ${deviceUuid} of yours is attached to this farm host ` +
        `(${farm.config.hostName}).`,
    );
  }
  return { uuid: device.uuid, name: device.name, serial: device.serial };
}

/** An installer's own failure as the tool error the model sees. */
export function toolErrorOf(error: unknown): unknown {
  if (!(error instanceof AppInstallerError)) return error;
  const code = {
    bad_package: 'invalid_arguments',
    device_unavailable: 'unavailable',
    timeout: 'unavailable',
    tool_failed: 'failed',
  } as const;
  return new ToolError(code[error.code], error.message, { cause: error });
}

export interface InstallRequest {
  deviceUuid: string;
  url: string | undefined;
  base64: string | undefined;
  replace: boolean;
}

/** Exactly one source, and a URL only over http(s); null when the request cannot run at all. */
export function packageSourceProblem(request: InstallRequest, kind: string): string | null {
  if ((request.url === undefined) === (request.base64 === undefined)) {
    return `Give exactly one of ${kind}_url and ${kind}_base64.`;
  }
  if (request.url !== undefined && !parsePackageUrl(request.url)) {
    return `${kind}_url must be an http or https URL.`;
  }
  return null;
}

export async function installApp(
  call: ToolCall,
  pick: (farm: Farm) => AppInstaller | null,
  request: InstallRequest,
  kind: string,
): Promise<z.output<typeof InstallOutput>> {
  const problem = packageSourceProblem(request, kind);
  if (problem) throw new ToolError('invalid_arguments', problem);
  const { farm, installer } = requireInstaller(call, pick);
  const device = await findFarmDevice(call, farm, installer, request.deviceUuid);
  const directory = await mkdtemp(join(tmpdir(), 'farm-app-'));
  try {
    const file = join(directory, `package${installer.fileExtension}`);
    let source: PackageFile;
    let capturedUnder: string | null = null;
    if (request.url !== undefined) {
      // The download goes through the capture proxy on the caller's farm device: it is recorded
      // in entries (source farm) like anything else the farm fetches.
      const egress = await farm.devices.egressFor(call, 'farm');
      capturedUnder = egress.deviceUuid;
      source = await downloadPackage(parsePackageUrl(request.url) as URL, egress, file, {
        maxBytes: farm.config.android.packageMaxBytes,
        timeoutMs: farm.config.android.downloadTimeoutMs,
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
      throw new ToolError(
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
    throw toolErrorOf(error);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

export async function listApps(
  call: ToolCall,
  pick: (farm: Farm) => AppInstaller | null,
  deviceUuid: string,
  filter: AppPackageFilter,
): Promise<z.output<typeof ListOutput>> {
  const { farm, installer } = requireInstaller(call, pick);
  const device = await findFarmDevice(call, farm, installer, deviceUuid);
  const packages = await installer.listPackages(device, filter).catch((error: unknown) => {
    throw toolErrorOf(error);
  });
  return {
    device_uuid: device.uuid,
    device_name: device.name,
    serial: device.serial,
    filter,
    packages,
  };
}

export async function uninstallApp(
  call: ToolCall,
  pick: (farm: Farm) => AppInstaller | null,
  deviceUuid: string,
  packageName: string,
): Promise<z.output<typeof UninstallOutput>> {
  const { farm, installer } = requireInstaller(call, pick);
  const device = await findFarmDevice(call, farm, installer, deviceUuid);
  try {
    const outcome = await installer.uninstall(device, packageName);
    if (!outcome.ok) {
      // Android answers DELETE_FAILED_INTERNAL_ERROR for a package that is not there at all.
      const installed = await installer.listPackages(device as AppTarget, 'all');
      if (!installed.includes(packageName)) {
        throw new ToolError('not_found', `${packageName} is not installed on ${device.name}.`);
      }
      throw new ToolError(
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
    throw toolErrorOf(error);
  }
}
