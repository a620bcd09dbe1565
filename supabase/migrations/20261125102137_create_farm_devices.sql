-- The farm's devices (issue 16, docs/farm.md "Devices"): the device row a user's farm browser
-- (source `cdp`) or sandboxed shell (source `farm`) is captured under. The device itself is an
-- ordinary public.devices row the tool server creates as the user, under RLS; this table marks it
-- as the farm's and says which source its traffic carries. Only the tool server writes it (as the
-- tables' owner) and the proxy reads it (as service_role), so no user can label their own
-- traffic as the farm's by editing a device.
create table private.farm_devices (
  device_uuid uuid primary key references public.devices (uuid) on delete cascade,
  source text not null,
  created_at timestamptz not null default now(),
  constraint farm_devices_source_check check (source in ('farm', 'cdp'))
);
comment on table private.farm_devices is
  'Devices of the farm (a user''s farm browser or shell) and the capture source of their traffic '
  '(entries.payload.source, device_status.source). Written by the tool server only.';
alter table private.farm_devices enable row level security;
revoke all on private.farm_devices from public, anon, authenticated, service_role;
-- The proxy (service_role, which bypasses RLS) labels captures on a farm device's port with its
-- source and leaves farm devices out of client-address attribution: the address they were
-- allocated from is the farm host's, shared by all of them.
grant select on private.farm_devices to service_role;
