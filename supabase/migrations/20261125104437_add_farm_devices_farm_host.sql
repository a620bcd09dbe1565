-- Farm devices per farm host (issue 16, docs/farm.md "Farm devices"): a device port accepts
-- traffic from the address of its latest /allocate (issue 21), so two farm hosts sharing a
-- user's farm device would take its port from each other. Each host now has its own device per
-- user and source, found by the host's name (the tool server's farm.hostName, as in
-- public.farm_attached_devices). Marks made before this name no host and are not found again.
alter table private.farm_devices add column farm_host text;
update private.farm_devices set farm_host = 'unknown' where farm_host is null;
alter table private.farm_devices
  alter column farm_host set not null,
  add constraint farm_devices_farm_host_check
    check (farm_host ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$');
comment on column private.farm_devices.farm_host is
  'The farm host whose browser or shell uses the device (farm.hostName of its tool server).';
