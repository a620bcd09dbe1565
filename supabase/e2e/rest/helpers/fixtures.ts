// Rows owned by a given user, written with the service role (which bypasses RLS), so that the
// isolation tests can check who sees, changes and removes whose rows.
import type { SupabaseClient } from '@supabase/supabase-js';

export type Row = Record<string, unknown>;

export async function insertAsService(service: SupabaseClient, table: string, row: Row) {
  const { data, error } = await service.from(table).insert(row).select().single();
  if (error) throw new Error(`fixture ${table}: ${error.message}`);
  return data as Row;
}

let sequence = 0;
export function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${process.pid}-${sequence}`;
}

/** One of each owned thing for `ownerId`: device, entry, workspace, tag, group, agent. */
export async function createOwnedGraph(service: SupabaseClient, ownerId: string) {
  const device = await insertAsService(service, 'devices', {
    name: unique('device'),
    os: 'android',
    owner_user_id: ownerId,
  });
  const entry = await insertAsService(service, 'entries', {
    device_uuid: device.uuid,
    payload: {
      method: 'GET',
      host: `${unique('host')}.example`,
      path: '/v1/owned',
      url: `https://owned.example/v1/owned?owner=${ownerId}`,
      statusCode: 200,
    },
  });
  const workspace = await insertAsService(service, 'workspaces', {
    name: unique('workspace'),
    owner_user_id: ownerId,
  });
  const tag = await insertAsService(service, 'tags', {
    name: unique('tag'),
    owner_user_id: ownerId,
  });
  const group = await insertAsService(service, 'service_groups', {
    name: unique('group'),
    owner_user_id: ownerId,
    ssl_proxy_domains: [`*.${ownerId.slice(0, 8)}.example`],
  });
  const agent = await insertAsService(service, 'assistant_agents', {
    slug: unique('agent'),
    label: 'Agent',
    model: 'gpt-4.1-mini',
    owner_user_id: ownerId,
  });
  return { device, entry, workspace, tag, group, agent };
}

export type OwnedGraph = Awaited<ReturnType<typeof createOwnedGraph>>;
