-- pgTAP (docs/devices.md): every device has its port from the moment it exists (SQL inserts
-- included, the pool's registration back-filling older devices, /allocate still choosing its own),
-- and set-up links: who may create one, that only its hash is kept, that opening one binds the port
-- to the opener's address, and that unknown, expired and farm links bind nothing.
begin;
create extension if not exists pgtap with schema extensions;
select plan(33);

\ir helpers/actors.psql

-- The test owns the pool, whatever a running proxy registered, and its ports (64101-64104).
delete from private.proxy_port_pool;
delete from public.device_ports where port between 64101 and 64104;

insert into public.devices (uuid, name, owner_user_id, created_at) values
  ('de000000-0000-4000-8000-0000000044a1', 'sql a1', pg_temp.uid('a'), now() - interval '3 days'),
  ('de000000-0000-4000-8000-0000000044a2', 'sql a2', pg_temp.uid('a'), now() - interval '2 days'),
  ('de000000-0000-4000-8000-0000000044a3', 'sql a3', pg_temp.uid('a'), now() - interval '1 day');
select is((select count(*)::int from public.device_ports
  where device_uuid::text like 'de000000-0000-4000-8000-0000000044a%'), 0,
  'without a registered pool a device has no port yet');

-- Back-fill when the pool is registered
select is(pg_temp.value_as('service', 'select private.register_proxy_port_pool(64101, 64104, 2)'), null,
  'the proxy registers its pool');
select results_eq($$select device_uuid::text, port from public.device_ports
  where device_uuid::text like 'de000000-0000-4000-8000-0000000044a%' order by port$$,
  $$values ('de000000-0000-4000-8000-0000000044a1', 64101), ('de000000-0000-4000-8000-0000000044a2', 64102)$$,
  'registering the pool gives older devices their ports, oldest first, up to the account''s cap');
select is(pg_temp.value_as('service', 'select private.register_proxy_port_pool(64101, 64104, 3)'),
  '{"pool_end": 64104, "pool_start": 64101, "per_owner_limit": 2}',
  'registering again reports the previous pool');
select is((select port from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044a3'), 64103,
  'a raised cap lets the next registration give the waiting device its port');
select is((select count(*)::int from public.device_ports where port between 64101 and 64103), 3,
  'and no device got two ports');

-- An insert by SQL after the pool exists
insert into public.devices (uuid, name, owner_user_id)
  values ('de000000-0000-4000-8000-0000000044b1', 'sql b1', pg_temp.uid('b'));
select is((select port from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044b1'), 64104,
  'a device inserted by SQL takes its port at once');

-- /allocate still chooses and binds its own port
delete from public.device_ports where device_uuid = 'de000000-0000-4000-8000-0000000044b1';
select set_config('request.jwt.claims', jsonb_build_object('sub', pg_temp.uid('b'), 'role',
  'authenticated')::text, true);
create temporary table bundle_b as select public.issue_proxy_bundle('pgtap 44') as issued;
select set_config('request.jwt.claims', '', true);
select throws_ok($$select * from bundle_b b, private.allocate_device_port(
  (b.issued ->> 'bundle_id')::uuid, b.issued ->> 'password', 'de000000-0000-4000-8000-0000000044b2',
  'allocated b2', null, '10.0.0.7', 64101, 64104, array[64104])$$, '53400', null,
  '/allocate honours the ports it must avoid: the trigger did not take one for it');
select is((select (a.port, a.created)::text from bundle_b b, private.allocate_device_port(
  (b.issued ->> 'bundle_id')::uuid, b.issued ->> 'password', 'de000000-0000-4000-8000-0000000044b2',
  'allocated b2', null, '10.0.0.7', 64101, 64104) a), '(64104,t)',
  '/allocate creates the device and allocates its port itself');
select is((select host(allocated_from) from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044b2'), '10.0.0.7',
  'and binds it to the caller''s address');
select is(current_setting('capture.allocating_device', true), '',
  '/allocate clears its mark when it is done');

-- Who may create a set-up link
select is(pg_temp.try_as('anon', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a1')$$),
  'error:42501', 'anon may not create a set-up link');
select is(pg_temp.try_as('viewer', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a1')$$),
  'error:42501', 'a viewer (no devices:edit) may not');
select is(pg_temp.try_as('b', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a1')$$),
  'error:P0002', 'another member is told the device does not exist');
select is(pg_temp.try_as('a', $$select public.create_device_setup_link('de000000-0000-4000-8000-00000000ffff')$$),
  'error:P0002', 'an unknown device does not exist either');
select is(pg_temp.try_as('a', $$select private.issue_device_setup_link('de000000-0000-4000-8000-0000000044a1')$$),
  'error:42501', 'an API caller may not issue links through the service function');
select is(pg_temp.try_as('a', $$select private.redeem_device_setup_link('x', '10.0.0.9')$$),
  'error:42501', 'nor redeem them');
select matches(pg_temp.value_as('a', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a1') ->> 'token'$$),
  '^[A-Za-z0-9_-]{32}$', 'the owner gets a 192-bit URL-safe token');
select matches(pg_temp.value_as('admin', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a1') ->> 'token'$$),
  '^[A-Za-z0-9_-]{32}$', 'an admin may create one for any device');

-- Opening a link
create temporary table link_a1 (token text);
insert into link_a1 values (private.issue_device_setup_link('de000000-0000-4000-8000-0000000044a1'));
select is((select count(*)::int from private.device_setup_links l, link_a1
  where l.token_sha256 = extensions.digest(link_a1.token, 'sha256')), 1,
  'the link is kept as the SHA-256 of its token (the table has no token column)');
select is(pg_temp.value_as('service', $$select count(*)::text from private.redeem_device_setup_link('not-a-token', '10.0.0.9')$$),
  '0', 'an unknown token binds nothing');
select is(pg_temp.try_as('a', format($$select private.device_setup_link_device(%L)$$,
  (select token from link_a1))), 'error:42501', 'an API caller may not look a token up');
select is(pg_temp.value_as('service', format($$select private.device_setup_link_device(%L)$$,
  (select token from link_a1))), 'de000000-0000-4000-8000-0000000044a1',
  'the proxy looks up the device of a live token');
select is((select allocated_from from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044a1'), null,
  'looking it up binds nothing');
select is(pg_temp.value_as('service', format($$select (r.device_name, r.port)::text
  from private.redeem_device_setup_link(%L, '10.0.0.9') r$$, (select token from link_a1))),
  '("sql a1",64101)', 'a live token names the device and its port');
select is((select host(allocated_from) from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044a1'), '10.0.0.9',
  'opening it binds the port to the opener''s address');
select is((select (host(ip), source)::text from public.device_status
  where device_uuid = 'de000000-0000-4000-8000-0000000044a1'), '(10.0.0.9,pac)',
  'and records the address as the device''s');
select is(pg_temp.value_as('service', format($$select r.port::text
  from private.redeem_device_setup_link(%L, '10.0.0.10') r$$, (select token from link_a1))),
  '64101', 'a phone that changed networks opens it again');
update private.device_setup_links set expires_at = now() - interval '1 second'
  where device_uuid = 'de000000-0000-4000-8000-0000000044a1';
select is(pg_temp.value_as('service', format($$select count(*)::text
  from private.redeem_device_setup_link(%L, '10.0.0.11') r$$, (select token from link_a1))),
  '0', 'an expired token binds nothing');
select is((select host(allocated_from) from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000044a1'), '10.0.0.10',
  'and leaves the binding as it was');
select throws_ok($$select private.issue_device_setup_link('de000000-0000-4000-8000-0000000044a1', interval '8 days')$$,
  '22023', null, 'a link lives at most 7 days');

-- Farm devices keep their port with the farm host
insert into private.farm_devices (device_uuid, source, farm_host)
  values ('de000000-0000-4000-8000-0000000044a2', 'cdp', 'farm-host');
select is(pg_temp.try_as('a', $$select public.create_device_setup_link('de000000-0000-4000-8000-0000000044a2')$$),
  'error:42501', 'a farm device has no set-up link');
select throws_ok(format($$select * from private.redeem_device_setup_link(%L, '10.0.0.12')$$,
  private.issue_device_setup_link('de000000-0000-4000-8000-0000000044a2')), '42501', null,
  'and a link issued before it joined the farm cannot move its port');

select * from finish();
rollback;
