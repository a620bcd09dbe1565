// A device port accepts only its device, against impersonation (docs/proxy.md "Listeners"): a
// client allowed on the proxy could otherwise send traffic to another account's port and have it
// captured under that device. Traffic attributed to a device (by its port or by its SNI) is
// accepted when it comes from the address that last called /allocate for the device
// (device_ports.allocated_from), or when it carries
// `Proxy-Authorization: Basic <bundle id>:<secret>` of a live certificate bundle of the device's
// owner (RFC 9110 §11.7.1). Anything else is refused, 407 without usable credentials and 403 with
// another account's, before a byte is forwarded or captured. A farm device's port
// (private.farm_devices; docs/farm.md "Farm devices: where farm traffic is captured") takes its
// farm host's address only: with the owner's bundle a phone could otherwise have its traffic
// captured as the farm's (source cdp or farm).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { asServiceRole } from '../service-role.ts';
import { bundleCredentials } from './bundle-credentials.ts';

/** Bindings and verified credentials are re-read after this long (a revoked bundle, a rebind). */
export const PORT_GUARD_CACHE_MS = 30_000;
const MAX_CACHED_CREDENTIALS = 10_000;

export type PortAdmission = { ok: true } | { ok: false; status: 403 | 407; message: string };

interface Binding {
  ownerUserId: string;
  allocatedFrom: string | null;
  /** The farm's device: its port admits the farm host's address and nothing else. */
  farm: boolean;
  at: number;
}

const plainAddress = (ip: string | null) => ip?.replace(/^::ffff:/, '') ?? null;

export class PortGuard {
  private readonly pool: pg.Pool;
  private readonly bindings = new Map<string, Binding>();
  /** sha256(header) → owner and when it was verified; only good credentials are kept. */
  private readonly owners = new Map<string, { owner: string; at: number }>();

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async admit(
    deviceUuid: string,
    clientIp: string | null,
    proxyAuthorization: string | undefined,
  ): Promise<PortAdmission> {
    let binding = await this.binding(deviceUuid, false);
    const ip = plainAddress(clientIp);
    if (binding && ip && binding.allocatedFrom === ip) return { ok: true };
    // The device may have allocated again from a new address through another daemon.
    if (binding && Date.now() - binding.at > 1_000) binding = await this.binding(deviceUuid, true);
    if (!binding) return { ok: false, status: 403, message: 'this device port has no device' };
    if (ip && binding.allocatedFrom === ip) return { ok: true };
    if (binding.farm) {
      return { ok: false, status: 403, message: "a farm device's port accepts its farm host only" };
    }
    const credentials = bundleCredentials(proxyAuthorization);
    const owner = credentials && (await this.ownerOf(proxyAuthorization as string, credentials));
    if (!owner) {
      return {
        ok: false,
        status: 407,
        message:
          "this device port accepts its device's address or a certificate bundle of its owner as proxy credentials",
      };
    }
    if (owner !== binding.ownerUserId) {
      return { ok: false, status: 403, message: 'this device port belongs to another account' };
    }
    return { ok: true };
  }

  /** This daemon's /allocate moved the device's binding: read it again next time. */
  forget(deviceUuid: string): void {
    this.bindings.delete(deviceUuid);
  }

  private async binding(deviceUuid: string, fresh: boolean): Promise<Binding | undefined> {
    const cached = this.bindings.get(deviceUuid);
    if (cached && !fresh && Date.now() - cached.at < PORT_GUARD_CACHE_MS) return cached;
    const { rows } = await this.asService<{
      owner_user_id: string;
      allocated_from: string | null;
      farm: boolean;
    }>(
      `select d.owner_user_id, host(p.allocated_from) as allocated_from, f.device_uuid is not null as farm
       from public.device_ports p join public.devices d on d.uuid = p.device_uuid
       left join private.farm_devices f on f.device_uuid = p.device_uuid
       where p.device_uuid = $1`,
      [deviceUuid],
    );
    const row = rows[0];
    if (!row) {
      this.bindings.delete(deviceUuid);
      return undefined;
    }
    const binding = {
      ownerUserId: row.owner_user_id,
      allocatedFrom: row.allocated_from,
      farm: row.farm,
      at: Date.now(),
    };
    this.bindings.set(deviceUuid, binding);
    return binding;
  }

  private async ownerOf(
    header: string,
    credentials: { bundleId: string; secret: string },
  ): Promise<string | null> {
    const key = createHash('sha256').update(header).digest('base64');
    const cached = this.owners.get(key);
    if (cached && Date.now() - cached.at < PORT_GUARD_CACHE_MS) return cached.owner;
    const { rows } = await this.asService<{ owner: string | null }>(
      'select private.proxy_bundle_owner($1, $2) as owner',
      [credentials.bundleId, credentials.secret],
    );
    const owner = rows[0]?.owner ?? null;
    if (owner) {
      if (this.owners.size >= MAX_CACHED_CREDENTIALS) this.owners.clear();
      this.owners.set(key, { owner, at: Date.now() });
    } else {
      this.owners.delete(key);
    }
    return owner;
  }

  private asService<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
    return asServiceRole<T>(this.pool, sql, values);
  }
}
