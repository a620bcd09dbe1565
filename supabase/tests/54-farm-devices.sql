-- pgTAP: the farm's devices (private.farm_devices; docs/farm.md "Farm devices"): which devices'
-- traffic the proxy labels `cdp` or `farm`. No API user may read or write the marks, not even on
-- their own device (else anyone could label their phone's traffic as the farm's); the proxy reads
-- them as service_role and may not write them; a mark goes with its device.
begin;
create extension if not exists pgtap with schema extensions;
select plan(11);

\ir helpers/actors.psql

insert into public.devices (uuid, name, owner_user_id)
values ('fa000000-0000-4000-8000-00000000000a', 'Farm browser', pg_temp.uid('a')),
       ('fa000000-0000-4000-8000-00000000000b', 'Phone', pg_temp.uid('a'));
insert into private.farm_devices (device_uuid, source, farm_host)
values ('fa000000-0000-4000-8000-00000000000a', 'cdp', 'farm-1');

select ok((select relrowsecurity from pg_class where oid = 'private.farm_devices'::regclass),
  'farm_devices has row level security enabled');
select is(pg_temp.try_as('a', 'select * from private.farm_devices'), 'error:42501',
  'the owner of a farm device may not read the marks');
select is(pg_temp.try_as('admin', 'select * from private.farm_devices'), 'error:42501',
  'an admin may not read them over the API either');
select is(pg_temp.try_as('a', $$insert into private.farm_devices (device_uuid, source, farm_host)
    values ('fa000000-0000-4000-8000-00000000000b', 'cdp', 'farm-1')$$), 'error:42501',
  'a user may not mark their own device as the farm''s');
select is(pg_temp.try_as('a', $$delete from private.farm_devices$$), 'error:42501',
  'a user may not unmark a farm device');
select is(pg_temp.try_as('service', 'select * from private.farm_devices'), 'ok:1',
  'the proxy (service_role) reads the marks');
select is(pg_temp.try_as('service', $$update private.farm_devices set source = 'farm'$$),
  'error:42501', 'the proxy may not change them');
select throws_ok($$insert into private.farm_devices (device_uuid, source, farm_host)
    values ('fa000000-0000-4000-8000-00000000000b', 'pac', 'farm-1')$$, '23514', null,
  'only the farm''s sources are marks');
select throws_ok($$insert into private.farm_devices (device_uuid, source)
    values ('fa000000-0000-4000-8000-00000000000b', 'farm')$$, '23502', null,
  'a mark names its farm host');
select is(pg_temp.try_as('a',
    $$delete from public.devices where uuid = 'fa000000-0000-4000-8000-00000000000a'$$), 'ok:1',
  'the owner deletes the farm device as any other');
select is((select count(*)::int from private.farm_devices), 0, 'its mark goes with it');

select * from finish();
rollback;
