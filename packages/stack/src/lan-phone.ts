// The phone the LAN-mode banner sets up (docs/devices.md): one scan of the QR code it prints opens
// the set-up page of a device made for it, so the phone's traffic is attributed to that device from
// its first request. The device ("Phone (LAN)") belongs to the oldest member who may edit devices
// (the demo's user@demo.local: admins see every device, so both demo logins see it live), else to
// the oldest administrator; a database without such a user gets no link, and the banner says how
// to set a device up from the dashboard instead.
import pg from 'pg';

export const LAN_PHONE_NAME = 'Phone (LAN)';

/** A fresh set-up link of the LAN phone, `<setupUrl>/setup/<token>`; undefined without owner. */
export async function preparePhoneSetup(
  dbUrl: string,
  setupUrl: string,
): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: dbUrl, application_name: 'stack-lan-phone' });
  await client.connect();
  try {
    const owner = await client.query<{ id: string }>(
      `select u.id from auth.users u
       join public.user_roles ur on ur.user_id = u.id
       join public.roles r on r.id = ur.role_id
       where r.is_admin or exists (select 1 from public.role_capabilities c
                                   where c.role_id = r.id and c.section = 'devices'
                                     and c.action = 'edit')
       order by r.is_admin, u.created_at, u.id
       limit 1`,
    );
    const ownerId = owner.rows[0]?.id;
    if (!ownerId) return undefined;
    const existing = await client.query<{ uuid: string }>(
      `select uuid from public.devices where owner_user_id = $1 and name = $2
       order by created_at limit 1`,
      [ownerId, LAN_PHONE_NAME],
    );
    const deviceUuid =
      existing.rows[0]?.uuid ??
      (
        await client.query<{ uuid: string }>(
          `insert into public.devices (name, os, owner_user_id) values ($1, 'other', $2)
           returning uuid`,
          [LAN_PHONE_NAME, ownerId],
        )
      ).rows[0]?.uuid;
    const link = await client.query<{ token: string }>(
      'select private.issue_device_setup_link($1) as token',
      [deviceUuid],
    );
    return `${setupUrl}/setup/${link.rows[0]?.token}`;
  } finally {
    await client.end();
  }
}
