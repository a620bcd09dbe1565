-- Issue 21, capture proxy: a device port accepts only its device. Each port is bound at /allocate
-- to the address that called it (device_ports.allocated_from, moved by every later /allocate of
-- the same device, since phones change networks); the proxy also accepts the Proxy-Authorization
-- of a live bundle of the device's owner (private.proxy_bundle_owner). The per-account port cap
-- defaults to 20, well below the 1000-port default pool, and stays counted under the allocation
-- lock.

alter table public.device_ports add column allocated_from inet;
comment on column public.device_ports.allocated_from is
  'The client address of the latest /allocate for this device: the proxy accepts traffic on the '
  'port from this address, or with a live bundle of the device owner as proxy credentials.';

-- Same signature as before (so grants and callers stay); the port's binding now follows every
-- successful call, and the per-account cap's default drops from 100 to 20.
drop function private.allocate_device_port(uuid, text, uuid, text, text, inet, integer, integer,
  integer[], integer);
create function private.allocate_device_port(
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
  return query select chosen, fn_bundle.owner_user_id, true;
end
$$;
comment on function private.allocate_device_port(uuid, text, uuid, text, text, inet, integer,
  integer, integer[], integer) is
  '/allocate: the device''s port (existing or the lowest free one), bound to client_ip; at most '
  'per_owner_limit ports per account (54000), pool exhausted 53400, another account''s device 42501.';
revoke execute on function private.allocate_device_port(uuid, text, uuid, text, text, inet,
  integer, integer, integer[], integer) from public;
grant execute on function private.allocate_device_port(uuid, text, uuid, text, text, inet,
  integer, integer, integer[], integer) to service_role;

-- Proxy-Authorization on a device port: the owner of a live bundle with this secret, or null.
create function private.proxy_bundle_owner(bundle_id uuid, secret text)
returns uuid
language sql
stable
security definer
set search_path = ''
as $$
  select b.owner_user_id from public.proxy_bundles b
  where b.id = proxy_bundle_owner.bundle_id and b.revoked_at is null
    and b.secret_sha256 = extensions.digest(proxy_bundle_owner.secret, 'sha256')
$$;
comment on function private.proxy_bundle_owner(uuid, text) is
  'The owner of a live (unrevoked) certificate bundle with these credentials, else null.';
revoke execute on function private.proxy_bundle_owner(uuid, text) from public;
grant execute on function private.proxy_bundle_owner(uuid, text) to service_role;

-- Failed /allocate calls per client address, in fixed one-minute windows shared by every daemon
-- (the federation broker's scheme): past the limit an address is refused before its credentials
-- are even checked.
create table private.proxy_allocate_failures (
  client_ip inet not null,
  window_start timestamptz not null,
  failures integer not null default 0,
  constraint proxy_allocate_failures_pkey primary key (client_ip, window_start)
);
comment on table private.proxy_allocate_failures is
  'Failed /allocate calls (bad credentials, refused or invalid requests) per client address and '
  'minute; read by private.proxy_allocate_blocked.';
-- Serves: the sweep of old windows.
create index proxy_allocate_failures_window_start_idx
  on private.proxy_allocate_failures (window_start);
alter table private.proxy_allocate_failures enable row level security;
revoke all on private.proxy_allocate_failures from public, anon, authenticated, service_role;

-- Seconds until the address may try again (0: it may now).
create function private.proxy_allocate_blocked(client_ip inet, per_minute integer)
returns integer
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce((
    select greatest(1, ceil(extract(epoch from f.window_start + interval '1 minute' - now())))::int
    from private.proxy_allocate_failures f
    where f.client_ip = proxy_allocate_blocked.client_ip
      and f.window_start = date_trunc('minute', now())
      and f.failures >= proxy_allocate_blocked.per_minute), 0)
$$;
revoke execute on function private.proxy_allocate_blocked(inet, integer) from public;
grant execute on function private.proxy_allocate_blocked(inet, integer) to service_role;

-- One atomic upsert per failure.
create function private.record_proxy_allocate_failure(client_ip inet)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  insert into private.proxy_allocate_failures as f (client_ip, window_start, failures)
  values (record_proxy_allocate_failure.client_ip, date_trunc('minute', now()), 1)
  on conflict on constraint proxy_allocate_failures_pkey
  do update set failures = f.failures + 1
$$;
revoke execute on function private.record_proxy_allocate_failure(inet) from public;
grant execute on function private.record_proxy_allocate_failure(inet) to service_role;

select cron.schedule('proxy-allocate-failures-sweep', '*/5 * * * *',
  $$delete from private.proxy_allocate_failures where window_start < now() - interval '5 minutes'$$);
