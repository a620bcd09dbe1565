-- devices and device_status (001 §2.2): one row per connected client instance and its live
-- heartbeat. Online-ness is derived from devices.last_seen_at, never stored (150 s, one window for
-- every platform), and exposed as the computed field `online`.
create table public.devices (
  uuid uuid primary key default gen_random_uuid(),
  name text not null,
  os text not null default 'other',
  os_version text,
  model text,
  app_version text,
  country text,
  owner_user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  setup jsonb not null default '{}',
  last_seen_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint devices_name_check check (char_length(btrim(name)) between 1 and 200),
  constraint devices_os_check check (os in ('ios', 'android', 'macos', 'windows', 'linux', 'other')),
  constraint devices_country_check check (country ~ '^[A-Z]{2}$'),
  constraint devices_setup_check check (jsonb_typeof(setup) = 'object')
);
comment on table public.devices is 'One row per connected client instance (phone, laptop, browser).';
comment on column public.devices.setup is
  'Onboarding state as the companion app reports it, e.g. {"ca_installed":true,"proxy":"pac"}.';
comment on column public.devices.last_seen_at is
  'Last traffic or heartbeat; the device is online while this is within 150 s (see online()).';
comment on column public.devices.country is 'ISO 3166-1 alpha-2 code, upper case.';
-- Serves: the ownership filter of every scoped policy and private.owned_device_uuids().
create index devices_owner_user_id_idx on public.devices (owner_user_id);
-- Serves: online counts (last_seen_at > now() - 150 s).
create index devices_last_seen_at_idx on public.devices (last_seen_at);

create table public.device_status (
  device_uuid uuid primary key references public.devices (uuid) on delete cascade,
  ip inet,
  vpn_state text not null default 'unknown',
  source text,
  country text,
  updated_at timestamptz not null default now(),
  constraint device_status_vpn_state_check check (
    vpn_state in ('connected', 'connecting', 'disconnected', 'unknown')),
  constraint device_status_source_check check (source ~ '^[a-z][a-z0-9_-]{0,31}$'),
  constraint device_status_country_check check (country ~ '^[A-Z]{2}$')
);
comment on table public.device_status is
  'Live heartbeat of a device: address, VPN state, capture source (vpn, pac, cdp, manual) and '
  'egress country. Whether it is online is devices.online, not a column here.';

-- The single definition of the online window (001 §2.2), shared by online() and the stats.
create function private.online_window()
returns interval
language sql
immutable
set search_path = ''
as $$ select interval '150 seconds' $$;
grant execute on function private.online_window() to authenticated, service_role;

create function public.online(device public.devices)
returns boolean
language sql
stable
set search_path = ''
as $$ select coalesce(device.last_seen_at > now() - private.online_window(), false) $$;
comment on function public.online(public.devices) is
  'Computed field: select=uuid,name,online and filter online=is.true over REST.';
revoke execute on function public.online(public.devices) from public, anon;
grant execute on function public.online(public.devices) to authenticated, service_role;

-- Security definer: policies of child tables (entries, settings, status) ask which devices the
-- caller owns without depending on the caller's devices:view capability.
create function private.owned_device_uuids()
returns uuid[]
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(array_agg(d.uuid), '{}') from public.devices d where d.owner_user_id = auth.uid()
$$;
comment on function private.owned_device_uuids() is 'The uuids of the devices the caller owns.';
grant execute on function private.owned_device_uuids() to authenticated, service_role;

create function private.touch_updated_at()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end
$$;

create trigger devices_touch_updated_at before update on public.devices
  for each row execute function private.touch_updated_at();
create trigger device_status_touch_updated_at before update on public.device_status
  for each row execute function private.touch_updated_at();

alter table public.devices enable row level security;
alter table public.device_status enable row level security;
revoke all on public.devices, public.device_status from anon;

create policy devices_select on public.devices for select to authenticated
  using ((select public.has_capability('devices', 'view'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy devices_insert on public.devices for insert to authenticated
  with check ((select public.has_capability('devices', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy devices_update on public.devices for update to authenticated
  using ((select public.has_capability('devices', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())))
  with check ((select public.has_capability('devices', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy devices_delete on public.devices for delete to authenticated
  using ((select public.has_capability('devices', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));

create policy device_status_select on public.device_status for select to authenticated
  using ((select public.has_capability('devices', 'view'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy device_status_insert on public.device_status for insert to authenticated
  with check ((select public.has_capability('devices', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy device_status_update on public.device_status for update to authenticated
  using ((select public.has_capability('devices', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())))
  with check ((select public.has_capability('devices', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy device_status_delete on public.device_status for delete to authenticated
  using ((select public.has_capability('devices', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));

create trigger devices_require_devices_edit before insert or update or delete on public.devices
  for each statement execute function private.require_capability('devices', 'edit');
create trigger device_status_require_devices_edit
  before insert or update or delete on public.device_status
  for each statement execute function private.require_capability('devices', 'edit');
