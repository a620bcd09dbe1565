-- pgTAP: farm_attached_devices (docs/farm.md "Android devices"). Only admins attach, move and
-- detach devices; a caller sees an attachment only with farm:view and only for a device RLS lets
-- them see, which is exactly the lookup the app tools make as the caller; only android and ios
-- devices attach; one serial per farm host.
begin;
create extension if not exists pgtap with schema extensions;
select plan(24);

\ir helpers/actors.psql

-- b is a member also granted farm:edit; a is a plain member; c a member with farm but not devices.
insert into public.roles (slug, name) values ('pgtap_farm', 'pgTAP farm'), ('pgtap_farm_only', 'pgTAP farm only');
insert into public.role_capabilities (role_id, section, action)
select id, 'farm', 'edit' from public.roles where slug in ('pgtap_farm', 'pgtap_farm_only');
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_farm';
do $$ begin perform pg_temp.add_user('c', 'pgtap_farm_only'); end $$;

insert into public.devices (uuid, name, os, owner_user_id) values
  ('fa000000-0000-4000-8000-0000000000a1', 'pgtap a phone', 'android', pg_temp.uid('a')),
  ('fa000000-0000-4000-8000-0000000000b1', 'pgtap b phone', 'android', pg_temp.uid('b')),
  ('fa000000-0000-4000-8000-0000000000b2', 'pgtap b laptop', 'linux', pg_temp.uid('b')),
  ('fa000000-0000-4000-8000-0000000000b3', 'pgtap b emulator', 'android', pg_temp.uid('b')),
  ('fa000000-0000-4000-8000-0000000000c1', 'pgtap c phone', 'android', pg_temp.uid('c'));

select ok((select relrowsecurity from pg_class where oid = 'public.farm_attached_devices'::regclass),
  'farm_attached_devices has row level security enabled');
select policies_are('public', 'farm_attached_devices',
  array['farm_attached_devices_select', 'farm_attached_devices_insert',
        'farm_attached_devices_update', 'farm_attached_devices_delete'],
  'farm_attached_devices has exactly the select, insert, update and delete policies');

-- Attaching: admins only.
select is(pg_temp.try_as('admin', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000a1', 'farm-1', 'R58M123ABC'),
         ('fa000000-0000-4000-8000-0000000000b1', 'farm-1', '127.0.0.1:5555'),
         ('fa000000-0000-4000-8000-0000000000c1', 'farm-1', 'emulator-5556')$$),
  'ok:3', 'an admin attaches devices to a farm host');
select is((select attached_by from public.farm_attached_devices
           where device_uuid = 'fa000000-0000-4000-8000-0000000000a1'),
  pg_temp.uid('admin'), 'attached_by records the admin who attached it');
select is(pg_temp.try_as('b', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm-1', 'emulator-5554')$$),
  'error:42501', 'a member holding farm:edit may not attach even their own device');
select is(pg_temp.try_as('a', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm-1', 'emulator-5554')$$),
  'error:42501', 'a member without farm:edit may not attach a device');
select is(pg_temp.try_as('anon', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm-1', 'emulator-5554')$$),
  'error:42501', 'anon may not attach a device');
select is(pg_temp.try_as('admin', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b2', 'farm-1', 'laptop')$$),
  'error:22023', 'a linux device cannot be attached');
select is(pg_temp.try_as('admin', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm-1', 'R58M123ABC')$$),
  'error:23505', 'a serial is attached once per farm host');
select is(pg_temp.try_as('admin', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm-1', '-s evil')$$),
  'error:23514', 'a serial that would read as an option or hold spaces is refused');
select is(pg_temp.try_as('admin', $$insert into public.farm_attached_devices (device_uuid, farm_host, serial)
  values ('fa000000-0000-4000-8000-0000000000b3', 'farm 1; x', 'emulator-5554')$$),
  'error:23514', 'a farm host name outside [A-Za-z0-9._-] is refused');

-- Seeing: farm:view and the device visible under the caller's own RLS (the app tools' lookup).
select is(pg_temp.try_as('admin', $$select * from public.farm_attached_devices
  where device_uuid::text like 'fa000000%'$$), 'ok:3', 'an admin sees every attachment');
select is(pg_temp.try_as('b', $$select * from public.farm_attached_devices
  where device_uuid::text like 'fa000000%'$$), 'ok:1',
  'a member with farm:edit sees only the attachment of their own device');
select is(pg_temp.value_as('b', $$select d.name || ' ' || a.serial from public.devices d
  join public.farm_attached_devices a on a.device_uuid = d.uuid
  where d.uuid = 'fa000000-0000-4000-8000-0000000000b1' and a.farm_host = 'farm-1'$$),
  'pgtap b phone 127.0.0.1:5555', 'the app tools'' lookup finds the caller''s attached device');
select is(pg_temp.try_as('b', $$select * from public.devices d
  join public.farm_attached_devices a on a.device_uuid = d.uuid
  where d.uuid = 'fa000000-0000-4000-8000-0000000000a1' and a.farm_host = 'farm-1'$$),
  'ok:0', 'the lookup finds no device of another user');
select is(pg_temp.try_as('b', $$select * from public.devices d
  join public.farm_attached_devices a on a.device_uuid = d.uuid
  where d.uuid = 'fa000000-0000-4000-8000-0000000000b1' and a.farm_host = 'farm-2'$$),
  'ok:0', 'the lookup finds no device attached to another farm host');
select is(pg_temp.try_as('a', $$select * from public.farm_attached_devices$$), 'ok:0',
  'a member without farm:view sees no attachment, not even of their own device');
select is(pg_temp.try_as('c', $$select * from public.farm_attached_devices$$), 'ok:0',
  'farm:edit without devices:view sees no attachment (the device itself is hidden)');
select is(pg_temp.try_as('anon', $$select * from public.farm_attached_devices$$), 'error:42501',
  'anon may not read attachments');

-- Moving and detaching: admins only.
select is(pg_temp.try_as('b', $$update public.farm_attached_devices set farm_host = 'farm-2'
  where device_uuid = 'fa000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member with farm:edit moves nothing to another host');
select is(pg_temp.try_as('b', $$delete from public.farm_attached_devices
  where device_uuid = 'fa000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member with farm:edit detaches nothing');
select is(pg_temp.try_as('admin', $$update public.farm_attached_devices set farm_host = 'farm-2'
  where device_uuid = 'fa000000-0000-4000-8000-0000000000b1'$$), 'ok:1',
  'an admin moves a device to another farm host');
select is(pg_temp.try_as('admin', $$delete from public.farm_attached_devices
  where device_uuid = 'fa000000-0000-4000-8000-0000000000c1'$$), 'ok:1', 'an admin detaches a device');
delete from public.devices where uuid = 'fa000000-0000-4000-8000-0000000000a1';
select is((select count(*)::int from public.farm_attached_devices
           where device_uuid = 'fa000000-0000-4000-8000-0000000000a1'), 0,
  'deleting a device detaches it');

select * from finish();
rollback;
