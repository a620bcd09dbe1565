// The proxy's view of devices and their dedicated ports (002 §2.3, §4.4). Postgres is the truth:
// allocation runs in `private.allocate_device_port` under an advisory lock, so two daemons sharing
// the database agree on every port. The registry caches port → device and client address → device
// for attribution, refreshes itself, and asks the database on a miss (a port another daemon
// allocated a moment ago). Farm devices (private.farm_devices, docs/farm.md "Farm devices") label
// the traffic on their port with the farm's source and are never attributed by address.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { PortSource } from '../connection-info.ts';
import { asServiceRole } from '../service-role.ts';

export interface PortRange {
  start: number;
  end: number;
}

export interface AllocationRequest {
  uuid: string;
  deviceName: string;
  country: string | null;
}

export interface Allocation {
  port: number;
  ownerUserId: string;
  /** True when this call gave the device its port (false: it had one). */
  created: boolean;
}

/** The device a dedicated port belongs to, and the `source` its traffic is captured with. */
export interface PortDevice {
  uuid: string;
  source: PortSource;
}

/**
 * What an /allocate or a set-up link just bound, as this daemon's maps learned it. Worker processes
 * pass it to their siblings (workers/worker-link.ts), so a phone's next connection is attributed
 * whichever worker takes it, without waiting for the port-change notification and the re-read.
 */
export interface LearnedDevice {
  port: number | null;
  device: PortDevice;
  /** The address it now has (null: none, or a farm device's, which is never used to attribute). */
  ip: string | null;
}

interface PortRow {
  device_uuid: string;
  port: number;
  /** Set for a farm device: `farm` (sandboxed shell) or `cdp` (farm browser). */
  farm_source: 'farm' | 'cdp' | null;
}

function portDevice(row: Pick<PortRow, 'device_uuid' | 'farm_source'>): PortDevice {
  return { uuid: row.device_uuid, source: row.farm_source ?? 'pac' };
}

/** A device as its set-up page shows it; `port` null while its owner is at the cap. */
export interface SetupLinkDevice {
  uuid: string;
  name: string;
  os: string;
  port: number | null;
}

export class AllocationError extends Error {
  override name = 'AllocationError';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Device ports one account may hold by default (PROXY_PORTS_PER_ACCOUNT): well below the default
 * pool of 1000, so one fresh signup cannot exhaust it for everyone (docs/proxy.md "Devices, ports
 * and PAC").
 */
export const DEFAULT_PORTS_PER_ACCOUNT = 20;

/** Postgres errors `allocate_device_port` raises on purpose, as HTTP answers. */
const ALLOCATION_ERRORS: Record<string, [number, string]> = {
  '42501': [403, 'forbidden'],
  '54000': [403, 'quota_exceeded'],
  '53400': [503, 'pool_exhausted'],
};

export class DeviceRegistry {
  private readonly pool: pg.Pool;
  private readonly range: PortRange;
  private readonly logger: Logger;
  private devicesByPort = new Map<number, PortDevice>();
  private devicesByIp = new Map<string, string[]>();
  /** Ports another program holds on this host: new allocations skip them. */
  private readonly unusable = new Set<number>();
  /** Ports this daemon allocated, with when: a refresh that read the table earlier keeps them. */
  private readonly allocatedAt = new Map<number, { device: PortDevice; at: number }>();

  /** Ports one account may hold (allocate_device_port's per_owner_limit, counted under its lock). */
  private readonly portsPerAccount: number;

  /** Told of every binding this daemon makes (worker processes pass it on). */
  private readonly onLearned: ((learned: LearnedDevice) => Promise<void>) | undefined;

  constructor(options: {
    pool: pg.Pool;
    range: PortRange;
    portsPerAccount?: number;
    /** Awaited before the binding is answered (a sibling worker learns it first). */
    onLearned?: (learned: LearnedDevice) => Promise<void>;
    logger: Logger;
  }) {
    this.pool = options.pool;
    this.onLearned = options.onLearned;
    this.range = options.range;
    this.portsPerAccount = options.portsPerAccount ?? DEFAULT_PORTS_PER_ACCOUNT;
    this.logger = options.logger;
  }

  get ports(): number[] {
    return [...this.devicesByPort.keys()];
  }

  /** True while a port this daemon just allocated is kept whatever the last read said. */
  get settling(): boolean {
    return this.allocatedAt.size > 0;
  }

  deviceForPort(port: number): PortDevice | undefined {
    return this.devicesByPort.get(port);
  }

  /** The device whose last known address is `ip`, when exactly one device has it. */
  deviceForIp(ip: string | null): string | undefined {
    if (!ip) return undefined;
    const devices = this.devicesByIp.get(ip.replace(/^::ffff:/, ''));
    return devices?.length === 1 ? devices[0] : undefined;
  }

  /** A binding made here or by a sibling worker: kept against a refresh that read it too early. */
  learn({ port, device, ip }: LearnedDevice): void {
    if (port !== null) {
      this.devicesByPort.set(port, device);
      this.allocatedAt.set(port, { device, at: Date.now() });
    }
    if (ip) this.devicesByIp.set(ip, [device.uuid]);
  }

  async refresh(): Promise<void> {
    const started = Date.now();
    const { rows } = await this.asService<PortRow & { ip: string | null }>(
      `select p.device_uuid, p.port, host(s.ip) as ip, f.source as farm_source
       from public.device_ports p
       left join public.device_status s using (device_uuid)
       left join private.farm_devices f using (device_uuid)`,
    );
    this.devicesByPort = new Map(rows.map((row) => [row.port, portDevice(row)]));
    // An allocation that committed while this query ran may be missing from its rows; one that
    // returned before the query began is in them (or was deleted since, which must win).
    for (const [port, { device, at }] of this.allocatedAt) {
      if (at >= started) this.devicesByPort.set(port, device);
      else this.allocatedAt.delete(port);
    }
    const byIp = new Map<string, string[]>();
    for (const row of rows) {
      // A farm device's address is the farm host's, which every farm device shares.
      if (row.ip && !row.farm_source) {
        byIp.set(row.ip, [...(byIp.get(row.ip) ?? []), row.device_uuid]);
      }
    }
    this.devicesByIp = byIp;
  }

  /** The device of `port`, asking the database when this daemon has not seen the port yet. */
  async lookupPort(port: number): Promise<PortDevice | undefined> {
    const known = this.devicesByPort.get(port);
    if (known) return known;
    const { rows } = await this.asService<PortRow>(
      `select p.device_uuid, p.port, f.source as farm_source
       from public.device_ports p left join private.farm_devices f using (device_uuid)
       where p.port = $1`,
      [port],
    );
    const device = rows[0] && portDevice(rows[0]);
    if (device) this.devicesByPort.set(port, device);
    return device;
  }

  /**
   * Records the project CA so bundles can carry it. Refused when another CA is registered:
   * every daemon of a deployment must serve the CA devices already trust.
   */
  async registerCa(certPem: string, fingerprint256: string): Promise<void> {
    await this.asService('select private.register_proxy_ca($1, $2)', [certPem, fingerprint256]);
  }

  /**
   * Records this daemon's pool and per-account cap, from which a device inserted through the API
   * takes its port (docs/proxy.md "Devices, ports and PAC": devices added anywhere). Every daemon
   * must use the same; a different one is logged.
   */
  async registerPool(): Promise<void> {
    const { rows } = await this.asService<{ previous: Record<string, number> | null }>(
      'select private.register_proxy_port_pool($1, $2, $3) as previous',
      [this.range.start, this.range.end, this.portsPerAccount],
    );
    const previous = rows[0]?.previous;
    if (
      previous &&
      (previous.pool_start !== this.range.start ||
        previous.pool_end !== this.range.end ||
        previous.per_owner_limit !== this.portsPerAccount)
    ) {
      this.logger.warn(
        { previous, now: { ...this.range, perOwnerLimit: this.portsPerAccount } },
        'the device port pool changed (devices keep their ports; every daemon sharing this ' +
          'database must use the same PROXY_DEVICE_PORTS and PROXY_PORTS_PER_ACCOUNT)',
      );
    }
  }

  /** Null for bad credentials (nothing is recorded then). */
  async allocate(
    credentials: { bundleId: string; secret: string },
    request: AllocationRequest,
    clientIp: string | null,
  ): Promise<Allocation | null> {
    await this.refuseFarmDeviceElsewhere(request.uuid, clientIp);
    try {
      const { rows } = await this.asService<{
        port: number;
        owner_user_id: string;
        created: boolean;
        farm_source: PortRow['farm_source'];
      }>(
        `select a.port, a.owner_user_id, a.created, f.source as farm_source
         from private.allocate_device_port($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) a
         left join private.farm_devices f on f.device_uuid = $3`,
        [
          credentials.bundleId,
          credentials.secret,
          request.uuid,
          request.deviceName,
          request.country,
          clientIp?.replace(/^::ffff:/, '') ?? null,
          this.range.start,
          this.range.end,
          [...this.unusable],
          this.portsPerAccount,
        ],
      );
      const row = rows[0];
      if (!row) return null;
      const device = portDevice({ device_uuid: request.uuid, farm_source: row.farm_source });
      const ip = clientIp && !row.farm_source ? clientIp.replace(/^::ffff:/, '') : null;
      this.learn({ port: row.port, device, ip });
      await this.onLearned?.({ port: row.port, device, ip });
      return { port: row.port, ownerUserId: row.owner_user_id, created: row.created };
    } catch (error) {
      const known = ALLOCATION_ERRORS[(error as { code?: string }).code ?? ''];
      if (known) throw new AllocationError(known[0], known[1], (error as Error).message);
      this.logger.error({ err: error }, 'allocation failed');
      throw new AllocationError(
        503,
        'unavailable',
        'the device database is unavailable; try again',
      );
    }
  }

  /**
   * A farm device's port stays bound to the farm host that first allocated it (docs/farm.md "Farm
   * devices"): its owner's bundle is the one the tool server uses, so without this a phone could
   * call /allocate for the farm device, move its binding to itself, and be captured as the farm
   * (and break the farm's egress). A farm host whose address changed deletes the device; the farm
   * makes another.
   */
  private async refuseFarmDeviceElsewhere(uuid: string, clientIp: string | null): Promise<void> {
    // Fails closed: a check that cannot run refuses the call as the allocation itself would.
    const { rows } = await this.asService<{ allocated_from: string | null }>(
      `select host(p.allocated_from) as allocated_from
       from public.device_ports p join private.farm_devices f using (device_uuid)
       where p.device_uuid = $1`,
      [uuid],
    ).catch((error: unknown) => {
      this.logger.error({ err: error }, 'cannot check for a farm device');
      throw new AllocationError(
        503,
        'unavailable',
        'the device database is unavailable; try again',
      );
    });
    const bound = rows[0]?.allocated_from;
    if (bound && bound !== clientIp?.replace(/^::ffff:/, '')) {
      throw new AllocationError(
        403,
        'farm_device',
        "a farm device's port stays with the farm host that allocated it",
      );
    }
  }

  /**
   * A set-up link opened from `clientIp` (docs/devices.md): the device's port is bound to that
   * address, as /allocate binds it, and the caches learn both at once. Null for an unknown or
   * expired token; an AllocationError for a farm device (403) or a database away (503).
   */
  async redeemSetupLink(token: string, clientIp: string | null): Promise<SetupLinkDevice | null> {
    const address = clientIp?.replace(/^::ffff:/, '') ?? null;
    try {
      const { rows } = await this.asService<SetupLinkDevice>(
        `select r.device_uuid as uuid, r.device_name as name, r.os, r.port
         from private.redeem_device_setup_link($1, $2) r`,
        [token, address],
      );
      const device = rows[0];
      if (!device) return null;
      const learned = {
        port: device.port,
        device: { uuid: device.uuid, source: 'pac' },
        ip: address,
      } as const;
      this.learn(learned);
      await this.onLearned?.(learned);
      return device;
    } catch (error) {
      const known = ALLOCATION_ERRORS[(error as { code?: string }).code ?? ''];
      if (known) throw new AllocationError(known[0], known[1], (error as Error).message);
      this.logger.error({ err: error }, 'set-up link failed');
      throw new AllocationError(
        503,
        'unavailable',
        'the device database is unavailable; try again',
      );
    }
  }

  /** The device of a live set-up link, binding nothing (the live check); null when none. */
  async setupLinkDevice(token: string): Promise<SetupLinkDevice | null> {
    const { rows } = await this.asService<SetupLinkDevice>(
      `select d.uuid, d.name, d.os, p.port
       from public.devices d left join public.device_ports p on p.device_uuid = d.uuid
       where d.uuid = private.device_setup_link_device($1)`,
      [token],
    );
    return rows[0] ?? null;
  }

  /** A device's name and port, for its set-up page reached through its own port. */
  async describeDevice(uuid: string): Promise<SetupLinkDevice | null> {
    const { rows } = await this.asService<SetupLinkDevice>(
      `select d.uuid, d.name, d.os, p.port
       from public.devices d left join public.device_ports p on p.device_uuid = d.uuid
       where d.uuid = $1`,
      [uuid],
    );
    return rows[0] ?? null;
  }

  /** Gives back a port just allocated that this host cannot open, and avoids it from now on. */
  async release(deviceUuid: string, port: number): Promise<void> {
    this.unusable.add(port);
    this.devicesByPort.delete(port);
    this.allocatedAt.delete(port);
    await this.asService('select private.release_device_port($1, $2)', [deviceUuid, port]);
  }

  private asService<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
    return asServiceRole<T>(this.pool, sql, values);
  }
}
