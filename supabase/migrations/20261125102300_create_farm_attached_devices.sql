-- Farm devices (issue 16, docs/farm.md "Android devices"): which of our devices rows is a phone or
-- emulator attached to a farm host, and by what id that host's tooling addresses it (the adb
-- serial for Android: a USB serial, `emulator-5554` or `host:port` for adb over TCP; a UDID for
-- iOS once it joins). An administrator attaches a device by inserting a row over REST.
--
-- Authorization stays here: the app tools find a device with
--   select … from public.devices d join public.farm_attached_devices a on a.device_uuid = d.uuid
--   where d.uuid = $1 and a.farm_host = $2
-- run as the caller, so RLS decides: the caller must see the devices row (devices:view, and own it
-- unless admin) and hold farm:view, and the device must be attached to this farm host.
create table public.farm_attached_devices (
  device_uuid uuid primary key references public.devices (uuid) on delete cascade,
  farm_host text not null,
  serial text not null,
  attached_at timestamptz not null default now(),
  attached_by uuid references auth.users (id) on delete set null default auth.uid(),
  constraint farm_attached_devices_farm_host_check check (farm_host ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
  -- adb serials are printable and without spaces; a leading '-' would read as an option.
  constraint farm_attached_devices_serial_check check (serial ~ '^[A-Za-z0-9._:\[\]][A-Za-z0-9._:\[\]-]{0,127}$'),
  constraint farm_attached_devices_farm_host_serial_key unique (farm_host, serial)
);
comment on table public.farm_attached_devices is
  'Devices attached to a farm host (docs/farm.md): farm_host is the tool server''s FARM_HOST_NAME, '
  'serial the id that host addresses the device by (adb serial). Admins attach; callers with '
  'farm:view see the rows of devices they can see.';
comment on column public.farm_attached_devices.serial is
  'Android: the adb serial (`adb devices`), e.g. R58M123ABC, emulator-5554 or 10.0.0.7:5555.';

-- A farm device is a phone or an emulator: the app tools install packages on it.
create function private.check_farm_attached_device()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  device_os text;
begin
  select d.os into device_os from public.devices d where d.uuid = new.device_uuid;
  if device_os is not null and device_os not in ('android', 'ios') then
    raise exception 'device % is % and cannot be attached to a farm host', new.device_uuid, device_os
      using errcode = '22023',
            hint = 'Only android (and, later, ios) devices are farm devices.';
  end if;
  return new;
end
$$;
comment on function private.check_farm_attached_device() is
  'BEFORE INSERT/UPDATE on farm_attached_devices: only android or ios devices are attached (22023).';

create trigger farm_attached_devices_check before insert or update on public.farm_attached_devices
  for each row execute function private.check_farm_attached_device();
create trigger farm_attached_devices_stamp_attached_by
  before insert or update on public.farm_attached_devices
  for each row execute function private.stamp_actor('attached_by');
create trigger farm_attached_devices_require_farm_edit
  before insert or update or delete on public.farm_attached_devices
  for each statement execute function private.require_capability('farm', 'edit');

alter table public.farm_attached_devices enable row level security;
revoke all on public.farm_attached_devices from anon, authenticated;
grant select, insert, update, delete on public.farm_attached_devices to authenticated;

-- The devices subquery runs under the caller's own RLS on devices, so a row shows only when its
-- device does. Served by the primary key (device_uuid) on both tables.
create policy farm_attached_devices_select on public.farm_attached_devices for select
  to authenticated
  using ((select public.has_capability('farm', 'view'))
    and exists (select 1 from public.devices d where d.uuid = device_uuid));
-- Attaching hardware to a host is an operator's act: administrators only.
create policy farm_attached_devices_insert on public.farm_attached_devices for insert
  to authenticated
  with check ((select public.has_capability('farm', 'edit')) and (select private.is_admin()));
create policy farm_attached_devices_update on public.farm_attached_devices for update
  to authenticated
  using ((select public.has_capability('farm', 'edit')) and (select private.is_admin()))
  with check ((select public.has_capability('farm', 'edit')) and (select private.is_admin()));
create policy farm_attached_devices_delete on public.farm_attached_devices for delete
  to authenticated
  using ((select public.has_capability('farm', 'edit')) and (select private.is_admin()));
