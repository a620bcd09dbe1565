-- Issue 26, real devices: every device has its port from the moment it exists, and a phone is set
-- up by opening one link.
--
-- Ports (002 §4.4 "dashboard-added devices have a port allocated automatically"): the insert
-- trigger of 20261125110000 served only API callers, and devices that existed before a proxy
-- registered its pool (the seed's) never got one. Now every insert takes a port from the
-- registered pool, whoever makes it, except /allocate's own (it chooses and binds the port
-- itself, avoiding ports this host cannot open), and registering the pool gives every device
-- still without a port its own.
--
-- Set-up links: a device's set-up page (served by the proxy on the LAN, docs/proxy.md) is opened
-- from a QR code with a random token instead of the bundle credentials /allocate takes: a phone's
-- browser cannot send basic credentials to /allocate. Opening it binds the device's port to the
-- address that opened it, as /allocate does, so that phone's traffic on its port is accepted and
-- attributed. The token is the credential: 192 random bits, stored as its SHA-256, alive 24 h.

-- /allocate marks its transaction so the insert trigger leaves the port to it: the body of
-- 20261125102600 with the mark set before its insert and cleared before it returns.
create or replace function private.allocate_device_port(
  bundle_id uuid,
  secret text,
  device_uuid uuid,
  device_name text,
  country text,
  client_ip inet,
  pool_start integer,
  pool_end integer,
  avoid_ports integer[] default '{}',
  per_owner_limit integer default 20)
returns table (port integer, owner_user_id uuid, created boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
  fn_bundle record;
  existing_owner uuid;
  chosen integer;
begin
  -- The insert below must not take a port through devices_assign_port: this function chooses it.
  perform set_config('capture.allocating_device', 'on', true);
  select b.id, b.owner_user_id into fn_bundle
  from public.proxy_bundles b
  where b.id = allocate_device_port.bundle_id and b.revoked_at is null
    and b.secret_sha256 = extensions.digest(allocate_device_port.secret, 'sha256');
  if not found then
    return;
  end if;
  -- One lock for every daemon: the cap below is counted and the port chosen without a race.
  perform pg_advisory_xact_lock(hashtext('private.allocate_device_port'));
  select d.owner_user_id into existing_owner
  from public.devices d where d.uuid = allocate_device_port.device_uuid;
  if existing_owner is not null and existing_owner <> fn_bundle.owner_user_id then
    raise exception 'device % belongs to another account', allocate_device_port.device_uuid
      using errcode = '42501';
  end if;
  insert into public.devices as d (uuid, name, country, owner_user_id)
  values (allocate_device_port.device_uuid, allocate_device_port.device_name,
          upper(allocate_device_port.country), fn_bundle.owner_user_id)
  on conflict (uuid) do update
    set name = excluded.name, country = coalesce(excluded.country, d.country);
  insert into public.device_status as s (device_uuid, ip, source)
  values (allocate_device_port.device_uuid, allocate_device_port.client_ip, 'pac')
  on conflict (device_uuid) do update set ip = excluded.ip, updated_at = now();
  update public.device_ports p set allocated_from = allocate_device_port.client_ip
  where p.device_uuid = allocate_device_port.device_uuid
  returning p.port into chosen;
  if chosen is not null then
    update public.proxy_bundles b set last_used_at = now() where b.id = fn_bundle.id;
    perform set_config('capture.allocating_device', '', true);
    return query select chosen, fn_bundle.owner_user_id, false;
    return;
  end if;
  if (select count(*) from public.device_ports p join public.devices d on d.uuid = p.device_uuid
      where d.owner_user_id = fn_bundle.owner_user_id) >= allocate_device_port.per_owner_limit then
    raise exception 'this account already holds % device ports', allocate_device_port.per_owner_limit
      using errcode = '54000';
  end if;
  select candidate into chosen
  from generate_series(allocate_device_port.pool_start, allocate_device_port.pool_end) as candidate
  where not exists (select 1 from public.device_ports p where p.port = candidate)
    and candidate <> all (allocate_device_port.avoid_ports)
  order by candidate
  limit 1;
  if chosen is null then
    raise exception 'the device port pool %-% is exhausted',
      allocate_device_port.pool_start, allocate_device_port.pool_end
      using errcode = '53400';
  end if;
  insert into public.device_ports (device_uuid, port, bundle_id, allocated_from)
  values (allocate_device_port.device_uuid, chosen, fn_bundle.id, allocate_device_port.client_ip);
  update public.proxy_bundles b set last_used_at = now() where b.id = fn_bundle.id;
  perform set_config('capture.allocating_device', '', true);
  return query select chosen, fn_bundle.owner_user_id, true;
end
$$;
comment on function private.allocate_device_port(uuid, text, uuid, text, text, inet, integer,
  integer, integer[], integer) is
  '/allocate: the device''s port (existing or the lowest free one), bound to client_ip; at most '
  'per_owner_limit ports per account (54000), pool exhausted 53400, another account''s device '
  '42501. Marks the transaction so devices_assign_port leaves the choice to it.';
revoke execute on function private.allocate_device_port(uuid, text, uuid, text, text, inet,
  integer, integer, integer[], integer) from public;
grant execute on function private.allocate_device_port(uuid, text, uuid, text, text, inet,
  integer, integer, integer[], integer) to service_role;

-- The lowest free port of the registered pool for one device, under /allocate's lock; nothing
-- when there is no pool, the device has a port, its owner is at the cap, or the pool is full.
create function private.assign_port_to_device(device_uuid uuid)
returns integer
language plpgsql
security definer
set search_path = ''
as $$
declare
  pool record;
  owner uuid;
  chosen integer;
begin
  select p.pool_start, p.pool_end, p.per_owner_limit into pool
  from private.proxy_port_pool p where p.id = 1;
  if not found then
    return null;
  end if;
  perform pg_advisory_xact_lock(hashtext('private.allocate_device_port'));
  select p.port into chosen from public.device_ports p
  where p.device_uuid = assign_port_to_device.device_uuid;
  if found then
    return chosen;
  end if;
  select d.owner_user_id into owner from public.devices d
  where d.uuid = assign_port_to_device.device_uuid;
  if not found or (select count(*) from public.device_ports p
                   join public.devices d on d.uuid = p.device_uuid
                   where d.owner_user_id = owner) >= pool.per_owner_limit then
    return null;
  end if;
  select candidate into chosen
  from generate_series(pool.pool_start, pool.pool_end) as candidate
  where not exists (select 1 from public.device_ports p where p.port = candidate)
  order by candidate
  limit 1;
  if chosen is not null then
    insert into public.device_ports (device_uuid, port)
    values (assign_port_to_device.device_uuid, chosen);
  end if;
  return chosen;
end
$$;
comment on function private.assign_port_to_device(uuid) is
  'The device''s port, or the lowest free one of private.proxy_port_pool under the /allocate '
  'lock; null without a pool, at the owner''s cap, or with the pool full.';
revoke execute on function private.assign_port_to_device(uuid) from public;

create or replace function private.assign_device_port()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform private.assign_port_to_device(new.uuid);
  return null;
end
$$;
comment on function private.assign_device_port() is
  'After any insert into devices but /allocate''s: the device''s port from the registered pool '
  '(private.assign_port_to_device).';
drop trigger devices_assign_port on public.devices;
create trigger devices_assign_port after insert on public.devices
  for each row
  when (current_setting('capture.allocating_device', true) is distinct from 'on')
  execute function private.assign_device_port();

-- Registering the pool also gives every device without a port its own, oldest first (the seed's
-- devices, devices made before any proxy ran).
create or replace function private.register_proxy_port_pool(
  pool_start integer, pool_end integer, per_owner_limit integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous jsonb;
begin
  select jsonb_build_object('pool_start', p.pool_start, 'pool_end', p.pool_end,
                            'per_owner_limit', p.per_owner_limit)
    into previous from private.proxy_port_pool p where p.id = 1;
  insert into private.proxy_port_pool as p (id, pool_start, pool_end, per_owner_limit)
  values (1, register_proxy_port_pool.pool_start, register_proxy_port_pool.pool_end,
          register_proxy_port_pool.per_owner_limit)
  on conflict (id) do update
    set pool_start = excluded.pool_start, pool_end = excluded.pool_end,
        per_owner_limit = excluded.per_owner_limit, registered_at = now();
  perform private.assign_port_to_device(d.uuid)
  from (select d.uuid from public.devices d
        where not exists (select 1 from public.device_ports p where p.device_uuid = d.uuid)
        order by d.created_at, d.uuid) d;
  return previous;
end
$$;

create table private.device_setup_links (
  token_sha256 bytea primary key,
  device_uuid uuid not null references public.devices (uuid) on delete cascade,
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  redeemed_at timestamptz,
  redeemed_from inet
);
comment on table private.device_setup_links is
  'Tokens of device set-up links (QR codes): opening one on the LAN binds the device''s port to '
  'the opener''s address. Only the SHA-256 of each token is kept.';
-- Serves: the sweep of expired links in issue_device_setup_link, and deleting a device's links.
create index device_setup_links_expires_at_idx on private.device_setup_links (expires_at);
create index device_setup_links_device_uuid_idx on private.device_setup_links (device_uuid);
alter table private.device_setup_links enable row level security;
revoke all on private.device_setup_links from public, anon, authenticated, service_role;

-- A new link for a device (the stack's start-up QR code, the Android set-up, the dashboard
-- through create_device_setup_link). The device gets its port now if it has none yet.
create function private.issue_device_setup_link(
  device_uuid uuid, lifetime interval default interval '24 hours', created_by uuid default null)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  token text := rtrim(translate(encode(extensions.gen_random_bytes(24), 'base64'), '+/', '-_'),
                      '=');
begin
  if not exists (select 1 from public.devices d where d.uuid = issue_device_setup_link.device_uuid)
  then
    raise exception 'no such device' using errcode = 'P0002';
  end if;
  if lifetime <= interval '0' or lifetime > interval '7 days' then
    raise exception 'a set-up link lives between 0 and 7 days' using errcode = '22023';
  end if;
  delete from private.device_setup_links l where l.expires_at < now();
  perform private.assign_port_to_device(issue_device_setup_link.device_uuid);
  insert into private.device_setup_links (token_sha256, device_uuid, created_by, expires_at)
  values (extensions.digest(token, 'sha256'), issue_device_setup_link.device_uuid,
          issue_device_setup_link.created_by, now() + lifetime);
  return token;
end
$$;
comment on function private.issue_device_setup_link(uuid, interval, uuid) is
  'A set-up link token for a device (alive for lifetime, at most 7 days); assigns its port when '
  'it has none. Only the token''s SHA-256 is stored.';
revoke execute on function private.issue_device_setup_link(uuid, interval, uuid) from public;
grant execute on function private.issue_device_setup_link(uuid, interval, uuid) to service_role;

-- The dashboard's "Set up" QR code: for callers who may edit the device (its owner, or an admin).
-- A farm device's port stays with its farm host (docs/farm.md), so it has no set-up link.
create function public.create_device_setup_link(device_uuid uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  token text;
begin
  if not public.has_capability('devices', 'edit') then
    raise exception 'permission denied: capability devices:edit required to set up a device'
      using errcode = '42501';
  end if;
  if not exists (select 1 from public.devices d
                 where d.uuid = create_device_setup_link.device_uuid
                   and (d.owner_user_id = auth.uid() or private.is_admin())) then
    raise exception 'no such device' using errcode = 'P0002';
  end if;
  if exists (select 1 from private.farm_devices f
             where f.device_uuid = create_device_setup_link.device_uuid) then
    raise exception 'a farm device is set up by its farm host' using errcode = '42501';
  end if;
  token := private.issue_device_setup_link(create_device_setup_link.device_uuid,
                                           interval '24 hours', auth.uid());
  return jsonb_build_object('token', token, 'expires_at', now() + interval '24 hours');
end
$$;
comment on function public.create_device_setup_link(uuid) is
  'A set-up link token for a device the caller may edit (24 h): the dashboard''s QR code. 42501 '
  'without devices:edit or for a farm device, P0002 for a device the caller cannot see.';
revoke execute on function public.create_device_setup_link(uuid) from public, anon;
grant execute on function public.create_device_setup_link(uuid) to authenticated;

-- The proxy, when a set-up link is opened: binds the device's port to the opener's address (as
-- /allocate does) and records the address as the device's. No row for an unknown or expired
-- token. Like /allocate, the port may be missing (owner at the cap, pool full): port is null.
create function private.redeem_device_setup_link(token text, client_ip inet)
returns table (device_uuid uuid, device_name text, os text, port integer)
language plpgsql
volatile
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
  link record;
  chosen integer;
begin
  select l.device_uuid into link from private.device_setup_links l
  where l.token_sha256 = extensions.digest(redeem_device_setup_link.token, 'sha256')
    and l.expires_at > now();
  if not found then
    return;
  end if;
  if exists (select 1 from private.farm_devices f where f.device_uuid = link.device_uuid) then
    raise exception 'a farm device is set up by its farm host' using errcode = '42501';
  end if;
  chosen := private.assign_port_to_device(link.device_uuid);
  update public.device_ports p set allocated_from = redeem_device_setup_link.client_ip
  where p.device_uuid = link.device_uuid;
  insert into public.device_status as s (device_uuid, ip, source)
  values (link.device_uuid, redeem_device_setup_link.client_ip, 'pac')
  on conflict (device_uuid) do update set ip = excluded.ip, updated_at = now();
  update private.device_setup_links l
  set redeemed_at = now(), redeemed_from = redeem_device_setup_link.client_ip
  where l.token_sha256 = extensions.digest(redeem_device_setup_link.token, 'sha256');
  return query select d.uuid, d.name, d.os, chosen from public.devices d
    where d.uuid = link.device_uuid;
end
$$;
comment on function private.redeem_device_setup_link(text, inet) is
  'A set-up link opened from client_ip: binds the device''s port to that address (as /allocate '
  'does); no row for an unknown or expired token; 42501 for a farm device.';
revoke execute on function private.redeem_device_setup_link(text, inet) from public;
grant execute on function private.redeem_device_setup_link(text, inet) to service_role;

-- The device of a live set-up link, without binding anything: the set-up page's live check, and
-- the Android set-up waiting for the phone's first request from another address.
create function private.device_setup_link_device(token text)
returns uuid
language sql
stable
security definer
set search_path = ''
as $$
  select l.device_uuid from private.device_setup_links l
  where l.token_sha256 = extensions.digest(device_setup_link_device.token, 'sha256')
    and l.expires_at > now()
$$;
comment on function private.device_setup_link_device(text) is
  'The device of a live set-up link token (null when unknown or expired); binds nothing.';
revoke execute on function private.device_setup_link_device(text) from public;
grant execute on function private.device_setup_link_device(text) to service_role;
