// `npm run stack -- device android [--serial S] [--device UUID] [--revert]`: points a phone on
// this machine's adb at its own device port of the running stack's proxy, pushes the CA and
// opens the device's set-up page, then says whether its traffic arrives; `--revert` undoes it.
import {
  AndroidSetupError,
  DEFAULT_ADB_PATH,
  DEFAULT_ADB_SERVER_PORT,
  describeTraffic,
  pointPhoneAtProxy,
  revertPhoneProxy,
} from '@capture/tool-server';
import pg from 'pg';
import { StackError, type StackErrorCode } from './errors.ts';
import { LAN_PHONE_NAME } from './lan-phone.ts';
import { readLiveState } from './state-file.ts';
import type { StatusVariables } from './status-variables.ts';

export interface DeviceAndroidOptions {
  dataDir: string;
  serial?: string;
  deviceUuid?: string;
  revert: boolean;
  log: (line: string) => void;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface TargetDevice {
  uuid: string;
  name: string;
  port: number | null;
}

export async function deviceAndroid(options: DeviceAndroidOptions): Promise<void> {
  const state = readLiveState(options.dataDir);
  if (!state) {
    throw new StackError(
      'not_running',
      `no stack is running for ${options.dataDir} (start one with npm start)`,
    );
  }
  // By name: PROXY_LAN_ADDRESS and PROXY_SETUP_URL are newer than some running stacks, whose
  // proxy then listens on loopback only and serves set-up pages on its management port.
  const variables: Partial<StatusVariables> = state.variables;
  const managementUrl = variables.PROXY_MANAGEMENT_URL;
  if (!managementUrl) {
    throw new StackError('not_running', 'this stack runs without its capture proxy');
  }
  const route = {
    lanAddress: variables.PROXY_LAN_ADDRESS || null,
    setupBaseUrl: variables.PROXY_SETUP_URL || managementUrl,
  };
  const adb = { ...adbFromEnvironment(process.env), serial: options.serial };
  if (options.deviceUuid !== undefined && !UUID.test(options.deviceUuid)) {
    throw new StackError('bad_option', `--device must be a device uuid, not ${options.deviceUuid}`);
  }
  const db = new pg.Client({ connectionString: variables.DB_URL });
  await db.connect();
  try {
    const device = await findDevice(db, options.deviceUuid);
    if (options.revert) {
      const report = await revertPhoneProxy(adb, { ...route, port: requirePort(device) }).catch(
        retell,
      );
      for (const args of report.commands) {
        options.log(`adb -s ${report.device.serial} ${args.join(' ')}`);
      }
      options.log(`Phone ${report.device.serial} no longer uses a proxy.`);
      return;
    }
    // The link first: issuing it gives the device a port when it has none yet.
    const token = await issueSetupLink(db, device.uuid);
    const port = requirePort(await findDevice(db, device.uuid));
    options.log(`Device "${device.name}" (${device.uuid}) captures on port ${port}.`);
    const connection = await pointPhoneAtProxy(
      adb,
      { ...route, port },
      { managementUrl, token, onProgress: options.log },
    ).catch(retell);
    const { serial, model } = connection.report.device;
    options.log(
      `Phone ${serial}${model ? ` (${model})` : ''} now uses the proxy ${connection.proxy}` +
        (connection.reverse ? ' through adb reverse.' : '.'),
    );
    options.log(`CA certificate pushed to Downloads. ${connection.caInstallSteps}.`);
    options.log(describeTraffic(connection.traffic));
  } finally {
    await db.end();
  }
}

/**
 * adb as the farm finds it (packages/farm/src/farm-config.ts): Debian's binary, and the
 * server port from ANDROID_ADB_SERVER_PORT as adb itself reads it, or 5037.
 */
function adbFromEnvironment(env: NodeJS.ProcessEnv): { adbPath: string; adbServerPort: number } {
  const chosen = env.ANDROID_ADB_SERVER_PORT || undefined;
  const port = chosen === undefined ? DEFAULT_ADB_SERVER_PORT : Number(chosen);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new StackError('bad_option', `ANDROID_ADB_SERVER_PORT must be a TCP port, not ${chosen}`);
  }
  return { adbPath: DEFAULT_ADB_PATH, adbServerPort: port };
}

/** --device, else the oldest device named "Phone (LAN)" (the stack's own, made at start). */
async function findDevice(db: pg.Client, uuid: string | undefined): Promise<TargetDevice> {
  const { rows } = await db.query<TargetDevice>(
    `select d.uuid, d.name, p.port
       from public.devices d left join public.device_ports p on p.device_uuid = d.uuid
      where ($1::uuid is not null and d.uuid = $1::uuid) or ($1::uuid is null and d.name = $2)
      order by d.created_at
      limit 1`,
    [uuid ?? null, LAN_PHONE_NAME],
  );
  const device = rows[0];
  if (!device) {
    throw new StackError(
      'bad_option',
      uuid
        ? `no device ${uuid} in this stack`
        : `no device named "${LAN_PHONE_NAME}" in this stack: choose one with --device UUID`,
    );
  }
  return device;
}

/** As the database owner: private.issue_device_setup_link is granted to service_role only. */
async function issueSetupLink(db: pg.Client, uuid: string): Promise<string> {
  const { rows } = await db.query<{ token: string }>(
    'select private.issue_device_setup_link($1::uuid) as token',
    [uuid],
  );
  return rows[0]?.token as string;
}

function requirePort(device: TargetDevice): number {
  if (device.port === null) {
    throw new StackError(
      'not_running',
      `device "${device.name}" has no proxy port: the proxy has not registered its port pool`,
    );
  }
  return device.port;
}

/** adb's and the phone's refusals as the CLI's one error type: one line, no stack trace. */
function retell(error: unknown): never {
  if (!(error instanceof AndroidSetupError)) throw error;
  const missingAdb = (error.cause as { code?: string } | undefined)?.code === 'ENOENT';
  const codes: Record<AndroidSetupError['code'], StackErrorCode> = {
    adb_unavailable: missingAdb ? 'missing_dependency' : 'not_running',
    proxy_unavailable: 'not_running',
    no_device: 'bad_option',
    several_devices: 'bad_option',
    device_unauthorized: 'bad_option',
    device_offline: 'bad_option',
    bad_input: 'bad_option',
    command_failed: 'process_exited',
    timeout: 'process_exited',
  };
  const hint = error.code === 'several_devices' ? ' (--serial S)' : '';
  throw new StackError(codes[error.code], `${error.message}${hint}`, { cause: error });
}
