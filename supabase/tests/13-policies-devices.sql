-- pgTAP: devices and device_status policies (devices section, own rows) and the computed field
-- devices.online (150 s window).
begin;
create extension if not exists pgtap with schema extensions;
select plan(58);

\ir helpers/actors.psql

-- a owns a1 and a2, b owns b1, the viewer owns v1, the role-less user owns n1.
insert into public.devices (uuid, name, owner_user_id, last_seen_at) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a'), now() - interval '10 seconds'),
  ('de000000-0000-4000-8000-0000000000a2', 'pgtap a2', pg_temp.uid('a'), null),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b'), now() - interval '149 seconds'),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer'), now() - interval '151 seconds'),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'), null);
insert into public.device_status (device_uuid, vpn_state) values
  ('de000000-0000-4000-8000-0000000000a1', 'connected'),
  ('de000000-0000-4000-8000-0000000000b1', 'connected'),
  ('de000000-0000-4000-8000-0000000000e1', 'connected');

select ok((select bool_and(relrowsecurity) from pg_class
           where oid in ('public.devices'::regclass, 'public.device_status'::regclass)),
  'devices and device_status have row level security enabled');

-- devices
select policies_are('public', 'devices',
  array['devices_select', 'devices_insert', 'devices_update', 'devices_delete'],
  'devices has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.devices where name like 'pgtap%'$$), 'ok:5',
  'an admin sees every device');
select is(pg_temp.try_as('a', $$select * from public.devices where name like 'pgtap%'$$), 'ok:2',
  'a member sees only their own devices');
select is(pg_temp.try_as('b', $$select * from public.devices where name like 'pgtap%'$$), 'ok:1',
  'another member sees only their own device');
select is(pg_temp.try_as('viewer', $$select * from public.devices where name like 'pgtap%'$$), 'ok:1',
  'a viewer sees their own device');
select is(pg_temp.try_as('none', $$select * from public.devices where name like 'pgtap%'$$), 'ok:0',
  'a user without devices:view sees not even their own device');
select is(pg_temp.try_as('anon', 'select * from public.devices'), 'error:42501', 'anon may not read devices');
select is(pg_temp.try_as('a', $$insert into public.devices (uuid, name) values
  ('de000000-0000-4000-8000-0000000000a3', 'pgtap a3')$$), 'ok:1', 'a member registers a device');
select is((select owner_user_id from public.devices where uuid = 'de000000-0000-4000-8000-0000000000a3'),
  pg_temp.uid('a'), 'a new device belongs to the caller by default');
select is(pg_temp.try_as('a', format($$insert into public.devices (name, owner_user_id) values ('pgtap x', %L)$$,
  pg_temp.uid('b'))), 'error:42501', 'a member may not register a device for another user');
select is(pg_temp.try_as('viewer', $$insert into public.devices (name) values ('pgtap v2')$$), 'error:42501',
  'a viewer may not register a device');
select is(pg_temp.try_as('none', $$insert into public.devices (name) values ('pgtap n2')$$), 'error:42501',
  'a user without a role may not register a device');
select is(pg_temp.try_as('anon', $$insert into public.devices (name) values ('pgtap anon')$$), 'error:42501',
  'anon may not register a device');
select is(pg_temp.try_as('admin', format($$insert into public.devices (name, owner_user_id) values ('pgtap b2', %L)$$,
  pg_temp.uid('b'))), 'ok:1', 'an admin registers a device for another user');
select is(pg_temp.try_as('a', $$update public.devices set name = 'pgtap a1 renamed'
  where uuid = 'de000000-0000-4000-8000-0000000000a1'$$), 'ok:1', 'a member renames their own device');
select is(pg_temp.try_as('a', $$update public.devices set name = 'pgtap b1 renamed'
  where uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:0', 'a member renames no device of another user');
select is(pg_temp.try_as('a', format($$update public.devices set owner_user_id = %L
  where uuid = 'de000000-0000-4000-8000-0000000000a1'$$, pg_temp.uid('b'))), 'error:42501',
  'a member may not hand their device to another user');
select is(pg_temp.try_as('viewer', $$update public.devices set name = 'pgtap v1 renamed'
  where uuid = 'de000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not rename their device');
select is(pg_temp.try_as('none', $$update public.devices set name = 'pgtap n1 renamed'
  where uuid = 'de000000-0000-4000-8000-0000000000f1'$$), 'error:42501',
  'a user without a role may not rename their device');
select is(pg_temp.try_as('anon', $$update public.devices set name = 'x'$$), 'error:42501',
  'anon may not rename a device');
select is(pg_temp.try_as('admin', $$update public.devices set name = 'pgtap b1 by admin'
  where uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:1', 'an admin renames any device');
select is(pg_temp.try_as('a', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member deletes no device of another user');
select is(pg_temp.try_as('viewer', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not delete their device');
select is(pg_temp.try_as('none', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000000f1'$$),
  'error:42501', 'a user without a role may not delete their device');
select is(pg_temp.try_as('anon', $$delete from public.devices$$), 'error:42501', 'anon may not delete a device');
select is(pg_temp.try_as('a', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000000a3'$$),
  'ok:1', 'a member deletes their own device');

-- device_status
select policies_are('public', 'device_status',
  array['device_status_select', 'device_status_insert', 'device_status_update', 'device_status_delete'],
  'device_status has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.device_status where device_uuid::text like 'de000000%'$$),
  'ok:3', 'an admin sees the status of every device');
select is(pg_temp.try_as('a', $$select * from public.device_status where device_uuid::text like 'de000000%'$$),
  'ok:1', 'a member sees the status of their own devices only');
select is(pg_temp.try_as('viewer', $$select * from public.device_status where device_uuid::text like 'de000000%'$$),
  'ok:1', 'a viewer sees the status of their own device');
select is(pg_temp.try_as('none', $$select * from public.device_status where device_uuid::text like 'de000000%'$$),
  'ok:0', 'a user without devices:view sees no status');
select is(pg_temp.try_as('anon', 'select * from public.device_status'), 'error:42501',
  'anon may not read device status');
select is(pg_temp.try_as('a', $$insert into public.device_status (device_uuid, vpn_state)
  values ('de000000-0000-4000-8000-0000000000a2', 'connecting')$$), 'ok:1',
  'a member reports the status of their own device');
select is(pg_temp.try_as('a', $$insert into public.device_status (device_uuid)
  values ('de000000-0000-4000-8000-0000000000f1')$$), 'error:42501',
  'a member may not report the status of another user''s device');
select is(pg_temp.try_as('none', $$insert into public.device_status (device_uuid)
  values ('de000000-0000-4000-8000-0000000000f1')$$), 'error:42501',
  'a user without a role may not report the status of their device');
select is(pg_temp.try_as('viewer', $$update public.device_status set vpn_state = 'disconnected'
  where device_uuid = 'de000000-0000-4000-8000-0000000000e1'$$), 'error:42501',
  'a viewer may not change the status of their device');
select is(pg_temp.try_as('anon', $$insert into public.device_status (device_uuid)
  values ('de000000-0000-4000-8000-0000000000f1')$$), 'error:42501', 'anon may not report a status');
select is(pg_temp.try_as('admin', $$insert into public.device_status (device_uuid)
  values ('de000000-0000-4000-8000-0000000000f1')$$), 'ok:1',
  'an admin reports the status of any device');
select is(pg_temp.try_as('a', $$update public.device_status set vpn_state = 'disconnected'
  where device_uuid = 'de000000-0000-4000-8000-0000000000a1'$$), 'ok:1',
  'a member updates the status of their own device');
select is(pg_temp.try_as('a', $$update public.device_status set vpn_state = 'disconnected'
  where device_uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member updates no status of another user''s device');
select is(pg_temp.try_as('a', $$update public.device_status set device_uuid = 'de000000-0000-4000-8000-0000000000b1'
  where device_uuid = 'de000000-0000-4000-8000-0000000000a1'$$), 'error:42501',
  'a member may not move a status onto another user''s device');
select is(pg_temp.try_as('admin', $$update public.device_status set vpn_state = 'unknown'
  where device_uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:1',
  'an admin updates the status of any device');
select is(pg_temp.try_as('anon', $$update public.device_status set vpn_state = 'unknown'$$), 'error:42501',
  'anon may not update a status');
select is(pg_temp.try_as('a', $$delete from public.device_status
  where device_uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member deletes no status of another user''s device');
select is(pg_temp.try_as('viewer', $$delete from public.device_status
  where device_uuid = 'de000000-0000-4000-8000-0000000000e1'$$), 'error:42501',
  'a viewer may not delete the status of their device');
select is(pg_temp.try_as('anon', $$delete from public.device_status$$), 'error:42501',
  'anon may not delete a status');
select is(pg_temp.try_as('a', $$delete from public.device_status
  where device_uuid = 'de000000-0000-4000-8000-0000000000a1'$$), 'ok:1',
  'a member deletes the status of their own device');
select is(pg_temp.try_as('admin', $$delete from public.device_status
  where device_uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'ok:1',
  'an admin deletes the status of any device');

-- devices.online: last_seen_at within 150 s.
select is(private.online_window(), interval '150 seconds', 'the online window is 150 seconds');
select is(pg_temp.value_as('a', $$select public.online(d)::text from public.devices d
  where uuid = 'de000000-0000-4000-8000-0000000000a1'$$), 'true', 'a device seen 10 s ago is online');
select is(pg_temp.value_as('admin', $$select public.online(d)::text from public.devices d
  where uuid = 'de000000-0000-4000-8000-0000000000b1'$$), 'true', 'a device seen 149 s ago is online');
select is(pg_temp.value_as('admin', $$select public.online(d)::text from public.devices d
  where uuid = 'de000000-0000-4000-8000-0000000000e1'$$), 'false', 'a device seen 151 s ago is offline');
select is(pg_temp.value_as('a', $$select public.online(d)::text from public.devices d
  where uuid = 'de000000-0000-4000-8000-0000000000a2'$$), 'false', 'a device never seen is offline');
select is(pg_temp.value_as('a', $$select count(*)::text from public.devices d
  where d.name like 'pgtap%' and d.online$$), '1', 'online works as a computed field in filters');
select is(pg_temp.value_as('anon', 'select public.online(null::public.devices)::text'), 'error:42501',
  'anon may not execute online');

-- Deleting a device takes its status along (last, it removes fixtures).
select is(pg_temp.try_as('admin', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000000f1'$$),
  'ok:1', 'an admin deletes any device');
select is((select count(*) from public.device_status where device_uuid = 'de000000-0000-4000-8000-0000000000f1'),
  0::bigint, 'deleting a device deletes its status');

select * from finish();
rollback;
