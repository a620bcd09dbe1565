// The farm's devices on the capture proxy (docs/farm.md "Farm devices"): every user has one
// device per farm host and source, `cdp` for their farm browser and `farm` for their sandboxed
// shell, so what those fetch lands in `entries` under a device of theirs (per host, because a
// device port follows the address of its latest /allocate). The device row is created as the user, under
// RLS (it needs devices:edit like any other device); private.farm_devices marks it as the farm's,
// which makes the proxy label its traffic with that source. Its port comes from the proxy's own
// POST /allocate (002 §4.4), so the listener is up before anything is sent, with a certificate
// bundle issued to the user for that one call and revoked right after.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ActingCaller } from './acting-caller.ts';
import type { FarmConfig } from './farm-config.ts';
import type { FarmDatabase } from './farm-database.ts';
import type { FarmCaptureSource, FarmDevices, FarmEgress } from './farm-egress.ts';
import { FarmError } from './farm-error.ts';

const DEVICE_NAMES: Record<FarmCaptureSource, string> = {
  cdp: 'Farm browser',
  farm: 'Farm shell',
};

/** /allocate answers are small; anything slower than this is a proxy in trouble. */
const ALLOCATE_TIMEOUT_MS = 10_000;

interface Bundle {
  bundle_id: string;
  password: string;
  ca_certificate: string;
}

interface DevicePort {
  port: number;
  caCertificatePem: string;
}

export class ProxyFarmDevices implements FarmDevices {
  private readonly config: FarmConfig;
  private readonly db: FarmDatabase;
  private readonly logger: Logger;
  /**
   * Ports this process allocated, by device: the proxy keeps a device's port and reopens it when
   * it restarts, so /allocate is needed once per device and process (a deleted device gets a new
   * uuid, hence a new allocation).
   */
  private readonly ports = new Map<string, Promise<DevicePort>>();

  constructor(config: FarmConfig, db: FarmDatabase, logger: Logger) {
    this.config = config;
    this.db = db;
    this.logger = logger;
  }

  async egressFor(call: ActingCaller, source: FarmCaptureSource): Promise<FarmEgress> {
    const managementUrl = this.config.proxyManagementUrl;
    if (!managementUrl) {
      throw new FarmError('unavailable', 'This farm has no capture proxy, so it has no network.');
    }
    const deviceUuid = await this.deviceOf(call, source);
    let allocation = this.ports.get(deviceUuid);
    if (!allocation) {
      allocation = this.allocate(call, managementUrl, deviceUuid, source);
      this.ports.set(deviceUuid, allocation);
      // A failed allocation is tried again by the next call.
      allocation.catch(() => this.ports.delete(deviceUuid));
    }
    const { port, caCertificatePem } = await allocation;
    return { deviceUuid, proxyHost: this.config.proxyHost, proxyPort: port, caCertificatePem };
  }

  private deviceName(source: FarmCaptureSource): string {
    return `${DEVICE_NAMES[source]} on ${this.config.hostName}`;
  }

  /**
   * The caller's farm device for `source` on this host, created on first use. One transaction
   * under a lock per user, host and source, so two first calls at once make one device.
   */
  private deviceOf(call: ActingCaller, source: FarmCaptureSource): Promise<string> {
    const userId = call.caller.userId;
    const host = this.config.hostName;
    return this.db.transaction(async (client) => {
      await client.query('select pg_advisory_xact_lock(hashtext($1))', [
        `farm_device:${userId}:${host}:${source}`,
      ]);
      const { rows } = await client.query<{ device_uuid: string }>(
        `select f.device_uuid from private.farm_devices f
           join public.devices d on d.uuid = f.device_uuid
          where d.owner_user_id = $1 and f.farm_host = $2 and f.source = $3
          order by f.created_at limit 1`,
        [userId, host, source],
      );
      if (rows[0]) return rows[0].device_uuid;
      const created = await insertDeviceAsCaller(client, call, this.deviceName(source));
      await client.query(
        'insert into private.farm_devices (device_uuid, source, farm_host) values ($1, $2, $3)',
        [created, source, host],
      );
      this.logger.info({ deviceUuid: created, source, userId }, 'farm device created');
      return created;
    });
  }

  /**
   * The device's port, allocated from this host. The proxy keeps a farm device's port with the
   * address that first allocated it (docs/farm.md "Farm devices"); when that is not this host's
   * (the farm host's address changed, or someone else allocated the new device first) it answers
   * 403 farm_device: the port is then given up and allocated again from here, once. The device,
   * and the captures under it, stay.
   */
  private async allocate(
    call: ActingCaller,
    managementUrl: string,
    deviceUuid: string,
    source: FarmCaptureSource,
  ): Promise<DevicePort> {
    const first = await this.allocateOnce(call, managementUrl, deviceUuid, source);
    if (!('refusedAsBoundElsewhere' in first)) return first;
    this.logger.warn({ deviceUuid, source }, 'farm device port bound elsewhere; allocating again');
    await this.db.query(
      `delete from public.device_ports p
        where p.device_uuid = $1
          and exists (select 1 from private.farm_devices f where f.device_uuid = p.device_uuid)`,
      [deviceUuid],
    );
    const second = await this.allocateOnce(call, managementUrl, deviceUuid, source);
    if ('refusedAsBoundElsewhere' in second) {
      throw new FarmError('failed', 'The capture proxy keeps refusing the farm device; retry.');
    }
    return second;
  }

  private async allocateOnce(
    call: ActingCaller,
    managementUrl: string,
    deviceUuid: string,
    source: FarmCaptureSource,
  ): Promise<DevicePort | { refusedAsBoundElsewhere: true }> {
    const bundle = await call.asCaller(async (client) => {
      const { rows } = await client.query<{ bundle: Bundle }>(
        'select public.issue_proxy_bundle($1) as bundle',
        [`${this.deviceName(source)} port`],
      );
      return rows[0]?.bundle as Bundle;
    });
    try {
      const response = await fetch(new URL('/allocate', managementUrl), {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${bundle.bundle_id}:${bundle.password}`).toString('base64')}`,
          'content-type': 'application/json',
        },
        // The same name: /allocate renames the device to what it is given.
        body: JSON.stringify({ uuid: deviceUuid, deviceName: this.deviceName(source) }),
        signal: AbortSignal.timeout(ALLOCATE_TIMEOUT_MS),
      }).catch((error: unknown) => {
        throw new FarmError('unavailable', 'The capture proxy is unreachable; retry shortly.', {
          cause: error,
        });
      });
      const body = (await response.json().catch(() => ({}))) as {
        port?: number;
        error?: string;
        message?: string;
      };
      if (response.status === 403 && body.error === 'farm_device') {
        return { refusedAsBoundElsewhere: true };
      }
      if (response.status !== 200 || typeof body.port !== 'number') {
        throw allocationError(response.status, body);
      }
      return { port: body.port, caCertificatePem: bundle.ca_certificate };
    } finally {
      // The bundle served this one call; nothing else may use its credentials.
      await call
        .asCaller((client) =>
          client.query('select public.revoke_proxy_bundle($1)', [bundle.bundle_id]),
        )
        .catch((error: unknown) =>
          this.logger.warn({ err: error, deviceUuid }, 'farm bundle not revoked'),
        );
    }
  }
}

/**
 * Inserts the device as the caller, exactly as PostgREST would (role authenticated and the token's
 * claims: RLS, has_capability and the default owner apply), then returns to the owner role for
 * the farm's own mark. A role without devices:edit gets a permission error that says why.
 */
async function insertDeviceAsCaller(
  client: pg.PoolClient,
  call: ActingCaller,
  name: string,
): Promise<string> {
  await client.query(
    `select set_config('role', 'authenticated', true),
            set_config('request.jwt.claims', $1, true)`,
    [JSON.stringify(call.caller.claims)],
  );
  try {
    const { rows } = await client.query<{ uuid: string }>(
      `insert into public.devices (name, os) values ($1, 'linux') returning uuid`,
      [name],
    );
    return rows[0]?.uuid as string;
  } catch (error) {
    if ((error as { code?: string }).code === '42501') {
      throw new FarmError(
        'permission_denied',
        'The farm captures its traffic under a device of yours, and your role may not create ' +
          'devices (devices:edit).',
        { cause: error },
      );
    }
    throw error;
  } finally {
    await client.query('reset role').catch(() => undefined);
  }
}

function allocationError(status: number, body: { error?: string; message?: string }): FarmError {
  const detail = body.message ?? body.error ?? `HTTP ${status}`;
  if (status === 503 || status >= 500) {
    return new FarmError('unavailable', `The capture proxy could not open a port: ${detail}`);
  }
  return new FarmError('failed', `The capture proxy refused the farm device: ${detail}`);
}
