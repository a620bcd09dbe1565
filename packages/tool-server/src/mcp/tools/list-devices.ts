// list_devices (001 §4.1): the caller's devices (every device for admins, by RLS) with online
// derived from last_seen_at (001 §2.2: within 150 s), proxy port and PAC URL, and live status.
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';

const Device = z.object({
  uuid: z.string(),
  name: z.string(),
  os: z.string(),
  os_version: z.string().nullable(),
  model: z.string().nullable(),
  owner_user_id: z.string(),
  online: z.boolean(),
  last_seen_at: z.string().nullable(),
  port: z.number().int().nullable(),
  pac_url: z.string().nullable(),
  status: z
    .object({
      ip: z.string().nullable(),
      vpn_state: z.string(),
      source: z.string().nullable(),
      country: z.string().nullable(),
      updated_at: z.string(),
    })
    .nullable(),
});

interface DeviceRow {
  uuid: string;
  name: string;
  os: string;
  os_version: string | null;
  model: string | null;
  owner_user_id: string;
  online: boolean;
  last_seen_at: Date | null;
  port: number | null;
  status: {
    ip: string | null;
    vpn_state: string;
    source: string | null;
    country: string | null;
    updated_at: string;
  } | null;
}

export const listDevices = defineTool({
  name: 'list_devices',
  title: 'List devices',
  description:
    'Lists the devices you can see (yours; every device for administrators): name, OS, whether ' +
    'it is online (traffic or heartbeat within 150 s), when it was last seen, its proxy port and ' +
    'PAC URL, and its live status (IP, VPN state, capture source, country).',
  input: z.object({
    online_only: z.boolean().optional().describe('Only devices online now.'),
  }),
  output: z.object({ devices: z.array(Device) }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'devices', action: 'view' },
  async run(call, args) {
    const rows = await call.asCaller(async (client) => {
      const { rows } = await client.query<DeviceRow>(
        `select d.uuid, d.name, d.os, d.os_version, d.model, d.owner_user_id,
                public.online(d) as online, d.last_seen_at, p.port,
                case when s.device_uuid is null then null else jsonb_build_object(
                  'ip', host(s.ip), 'vpn_state', s.vpn_state, 'source', s.source,
                  'country', s.country, 'updated_at', s.updated_at) end as status
           from public.devices d
           left join public.device_ports p on p.device_uuid = d.uuid
           left join public.device_status s on s.device_uuid = d.uuid
          where $1::boolean is not true or public.online(d)
          order by d.last_seen_at desc nulls last, d.name`,
        [args.online_only ?? null],
      );
      return rows;
    });
    return {
      devices: rows.map((row) => ({
        ...row,
        last_seen_at: row.last_seen_at?.toISOString() ?? null,
        pac_url: row.port === null ? null : call.pacUrl(row.port),
      })),
    };
  },
});
