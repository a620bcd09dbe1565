// The dashboard's "Android over USB" action (docs/devices.md "Android over USB"): list the phones on
// this machine's adb, point one at a device's capture port, revert it. Authenticated by the
// dashboard session's bearer token like the consent API; SQL decides what the caller may do:
// the set-up link comes from public.create_device_setup_link run as the caller (devices:edit on
// a device they can see), the port from device_ports under their RLS.
import {
  ADB_SERIAL,
  AndroidSetupError,
  type AndroidSetupErrorCode,
  describeTraffic,
  listAttachedPhones,
  pointPhoneAtProxy,
  revertPhoneProxy,
} from '@capture/farm';
import type { Context } from 'hono';
import { decodeJwt } from 'jose';
import { bearerToken, verifyDashboardSession } from '../auth/dashboard-session.ts';
import type { AndroidSetupConfig } from '../config.ts';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { OAuthError } from '../oauth/oauth-error.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** adb's refusals by who can fix them: the person at the phone (409), the host (503), adb (502). */
const STATUS: Record<AndroidSetupErrorCode, 400 | 409 | 502 | 503 | 504> = {
  adb_unavailable: 503,
  proxy_unavailable: 503,
  no_device: 409,
  several_devices: 409,
  device_unauthorized: 409,
  device_offline: 409,
  bad_input: 400,
  command_failed: 502,
  timeout: 504,
};

interface Caller {
  userId: string;
  claims: Record<string, unknown>;
}

interface PhoneRequest {
  deviceUuid: string;
  serial: string | undefined;
}

export function androidSetupRoutes(context: ToolServerContext, setup: AndroidSetupConfig) {
  const adbFor = (serial?: string) => ({
    adbPath: setup.adbPath,
    adbServerPort: setup.adbServerPort,
    serial,
  });
  const route = (port: number) => ({
    lanAddress: setup.proxyHost,
    port,
    setupBaseUrl: setup.setupBaseUrl,
  });

  /** GET /dashboard/android/devices: the phones adb sees, in any state. */
  const listDevices = async (c: Context<ToolServerEnv>) => {
    const caller = await authenticate(context, c);
    await requireDeviceEditing(context, caller);
    return answer(c, context, async () => {
      // No adb server running is the usual state of a laptop with no phone attached, not a
      // failure of this call: the list says so (and the browser logs no failed request).
      try {
        return { devices: await listAttachedPhones(adbFor()) };
      } catch (error) {
        if (!(error instanceof AndroidSetupError && error.code === 'adb_unavailable')) throw error;
        return { devices: [], adb_unavailable: error.message };
      }
    });
  };

  /** POST /dashboard/android/connect {device_uuid, serial?}. */
  const connect = async (c: Context<ToolServerEnv>) => {
    const caller = await authenticate(context, c);
    const request = await readPhoneRequest(c);
    const { token, port } = await issueLinkAsCaller(context, caller, request.deviceUuid);
    return answer(c, context, async () => {
      const connection = await pointPhoneAtProxy(adbFor(request.serial), route(port), {
        managementUrl: setup.managementUrl,
        token,
        trafficTimeoutMs: setup.trafficTimeoutMs,
      });
      const { traffic } = connection;
      context.logger.info(
        {
          event: 'android_setup.connected',
          user_id: caller.userId,
          device_uuid: request.deviceUuid,
          serial: connection.report.device.serial,
          reverse: connection.reverse,
          traffic_seen: traffic.seen,
        },
        'phone pointed at its device port',
      );
      return {
        serial: connection.report.device.serial,
        model: connection.report.device.model,
        proxy: connection.proxy,
        reverse: connection.reverse,
        commands: connection.commandLines,
        ca_install_steps: connection.caInstallSteps,
        traffic: {
          seen: traffic.seen,
          connection: traffic.seen ? traffic.connection : null,
          listener: traffic.seen ? traffic.listener : null,
          last_seen_at: traffic.seen ? traffic.lastSeenAt : null,
          ca_problem: traffic.seen ? null : traffic.caProblem,
          summary: describeTraffic(traffic),
        },
      };
    });
  };

  /** POST /dashboard/android/revert {device_uuid, serial?}: the port names the reverse forwarding. */
  const revert = async (c: Context<ToolServerEnv>) => {
    const caller = await authenticate(context, c);
    const request = await readPhoneRequest(c);
    await requireDeviceEditing(context, caller);
    const port = await readPortAsCaller(context, caller, request.deviceUuid);
    return answer(c, context, async () => {
      const report = await revertPhoneProxy(adbFor(request.serial), route(port));
      context.logger.info(
        {
          event: 'android_setup.reverted',
          user_id: caller.userId,
          device_uuid: request.deviceUuid,
          serial: report.device.serial,
        },
        'phone proxy setting removed',
      );
      return {
        serial: report.device.serial,
        commands: report.commands.map((args) =>
          ['adb', '-s', report.device.serial, ...args].join(' '),
        ),
      };
    });
  };

  return { listDevices, connect, revert };
}

async function authenticate(
  context: ToolServerContext,
  c: Context<ToolServerEnv>,
): Promise<Caller> {
  const authorization = c.req.header('authorization');
  const account = await verifyDashboardSession(context.db, authorization, {
    secret: context.secret,
    authIssuer: context.authIssuer,
  });
  // Verified just above: its claims are replayed as the caller's for SQL, as PostgREST does.
  return { userId: account.userId, claims: decodeJwt(bearerToken(authorization) as string) };
}

async function readPhoneRequest(c: Context<ToolServerEnv>): Promise<PhoneRequest> {
  const body = (await c.req.json().catch(() => null)) as Record<string, unknown> | null;
  const deviceUuid = body?.device_uuid;
  const serial = body?.serial ?? undefined;
  if (typeof deviceUuid !== 'string' || !UUID.test(deviceUuid)) {
    throw new OAuthError('invalid_request', 'The body must name a device_uuid.');
  }
  if (serial !== undefined && (typeof serial !== 'string' || !ADB_SERIAL.test(serial))) {
    throw new OAuthError('invalid_request', 'serial must be an adb serial.');
  }
  return { deviceUuid, serial };
}

async function requireDeviceEditing(context: ToolServerContext, caller: Caller): Promise<void> {
  const allowed = await context.db.asCaller(caller.claims, async (client) => {
    const { rows } = await client.query<{ allowed: boolean }>(
      `select public.has_capability('devices', 'edit') as allowed`,
    );
    return rows[0]?.allowed === true;
  });
  if (!allowed) {
    throw new OAuthError('access_denied', 'Setting up a phone needs devices:edit.', {
      status: 403,
    });
  }
}

/** The set-up link and the port, both as the caller: 42501 → 403, a device they cannot see → 404. */
async function issueLinkAsCaller(
  context: ToolServerContext,
  caller: Caller,
  deviceUuid: string,
): Promise<{ token: string; port: number }> {
  const token = await context.db
    .asCaller(caller.claims, async (client) => {
      const { rows } = await client.query<{ link: { token: string } }>(
        'select public.create_device_setup_link($1::uuid) as link',
        [deviceUuid],
      );
      return rows[0]?.link.token as string;
    })
    .catch(refusedBySql);
  return { token, port: await readPortAsCaller(context, caller, deviceUuid) };
}

async function readPortAsCaller(
  context: ToolServerContext,
  caller: Caller,
  deviceUuid: string,
): Promise<number> {
  const port = await context.db.asCaller(caller.claims, async (client) => {
    const { rows } = await client.query<{ port: number }>(
      'select p.port from public.device_ports p where p.device_uuid = $1::uuid',
      [deviceUuid],
    );
    return rows[0]?.port ?? null;
  });
  if (port === null) {
    throw new OAuthError('not_found', 'No such device, or it has no capture port yet.');
  }
  return port;
}

function refusedBySql(error: unknown): never {
  const code = (error as { code?: string }).code;
  if (code === '42501') {
    throw new OAuthError('access_denied', 'You may not set up this device.', {
      status: 403,
      cause: error,
    });
  }
  if (code === 'P0002') throw new OAuthError('not_found', 'No such device.', { cause: error });
  throw error;
}

/** Runs the adb part; its refusals become `{error, error_description[, serials]}`. */
async function answer(
  c: Context<ToolServerEnv>,
  context: ToolServerContext,
  work: () => Promise<object>,
): Promise<Response> {
  try {
    return c.json(await work(), 200, { 'cache-control': 'no-store' });
  } catch (error) {
    if (!(error instanceof AndroidSetupError)) throw error;
    context.logger.warn(
      { event: 'android_setup.refused', code: error.code, err: error.cause ?? error },
      error.message,
    );
    return c.json(
      {
        error: error.code,
        error_description: error.message,
        ...(error.serials.length > 0 && { serials: error.serials }),
      },
      STATUS[error.code],
      { 'cache-control': 'no-store' },
    );
  }
}
