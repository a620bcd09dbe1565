-- pgTAP: the capture proxy's device plumbing (002 §2.3, §4.4, §5): certificate bundles (issued to
-- devices:edit, password shown once, only its hash kept and readable by no API role), device
-- ports (read-only through the API, owner-scoped), CA registration, and allocation (credentials
-- checked, ownership kept, one port per uuid, renaming keeps the port, pool bounds).
begin;
create extension if not exists pgtap with schema extensions;
select plan(46);

\ir helpers/actors.psql

-- A running proxy registers its CA when it starts; these tests register their own.
delete from private.proxy_ca;

select ok((select bool_and(relrowsecurity) from pg_class where oid in (
    'private.proxy_ca'::regclass, 'public.proxy_bundles'::regclass, 'public.device_ports'::regclass)),
  'proxy_ca, proxy_bundles and device_ports have row level security enabled');
select policies_are('public', 'proxy_bundles', array['proxy_bundles_select'],
  'proxy_bundles has only a select policy (writes go through the RPCs)');
select policies_are('public', 'device_ports', array['device_ports_select'],
  'device_ports has only a select policy (writes are the proxy''s)');

-- Bundles need the proxy's CA first.
select is(pg_temp.value_as('a', $$select public.issue_proxy_bundle('phone')::text$$), 'error:55000',
  'no bundle before the proxy registered its CA');
select lives_ok($$select private.register_proxy_ca(
    '-----BEGIN CERTIFICATE-----pgtap', 'AA:BB')$$, 'the proxy registers its CA');
select lives_ok($$select private.register_proxy_ca(
    '-----BEGIN CERTIFICATE-----pgtap', 'AA:BB')$$, 'registering the same CA again is harmless');
select throws_ok($$select private.register_proxy_ca('-----BEGIN CERTIFICATE-----other', 'CC:DD')$$,
  '23505', null, 'a different CA is refused while one is registered');
select is(pg_temp.try_as('a', 'select * from private.proxy_ca'), 'error:42501',
  'API users may not read the CA table');
select is(pg_temp.try_as('a', $$select private.register_proxy_ca('-----BEGIN CERTIFICATE-----x', 'EE')$$),
  'error:42501', 'API users may not register a CA');

-- Issuing.
select pg_temp.value_as('a', $$select public.issue_proxy_bundle('a phone')::text$$) as a_bundle \gset
select ok((:'a_bundle')::jsonb ?& array['bundle_id', 'username', 'password', 'ca_certificate'],
  'a member gets a bundle with credentials and the CA certificate');
select is((:'a_bundle')::jsonb ->> 'ca_certificate', '-----BEGIN CERTIFICATE-----pgtap',
  'the bundle carries the registered CA');
select ok(length((:'a_bundle')::jsonb ->> 'password') >= 43, 'the password has 256 bits of entropy');
select is((select secret_sha256 from public.proxy_bundles where id = ((:'a_bundle')::jsonb ->> 'bundle_id')::uuid),
  extensions.digest((:'a_bundle')::jsonb ->> 'password', 'sha256'), 'only the SHA-256 of the password is stored');
select pg_temp.value_as('b', $$select public.issue_proxy_bundle('b phone')::text$$) as b_bundle \gset
select is(pg_temp.value_as('viewer', $$select public.issue_proxy_bundle('v')::text$$), 'error:42501',
  'a viewer (no devices:edit) gets no bundle');
select is(pg_temp.value_as('none', $$select public.issue_proxy_bundle('n')::text$$), 'error:42501',
  'a user without a role gets no bundle');
select is(pg_temp.value_as('anon', $$select public.issue_proxy_bundle('x')::text$$), 'error:42501',
  'anon gets no bundle');
select is(pg_temp.value_as('a', $$select public.issue_proxy_bundle('  ')::text$$), 'error:22023',
  'a blank label is refused');

-- Reading bundles.
select is(pg_temp.try_as('a', 'select id, label from public.proxy_bundles'), 'ok:1',
  'a member sees their own bundle');
select is(pg_temp.try_as('admin', 'select id, label from public.proxy_bundles'), 'ok:2',
  'an admin sees every bundle');
select is(pg_temp.try_as('none', 'select id from public.proxy_bundles'), 'ok:0',
  'a user without devices:view sees no bundle');
select is(pg_temp.try_as('a', 'select secret_sha256 from public.proxy_bundles'), 'error:42501',
  'not even the owner may read the password hash');
select is(pg_temp.try_as('admin', 'select * from public.proxy_bundles'), 'error:42501',
  'not even an admin may read the password hash');
select is(pg_temp.try_as('a', $$insert into public.proxy_bundles (label, secret_sha256)
  values ('forged', extensions.digest('x', 'sha256'))$$), 'error:42501',
  'a member may not write a bundle directly (chosen password)');

-- Allocation (the proxy calls it as the service role).
select is(pg_temp.try_as('a', format($$select private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d001', 'x', null, null, 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'error:42501',
  'API users may not call the allocator');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, 'wrong',
    'de000000-0000-4000-8000-00000000d001', 'x', null, null, 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id')), 'ok:0', 'a wrong password allocates nothing');
select is((select count(*)::int from public.devices where uuid = 'de000000-0000-4000-8000-00000000d001'), 0,
  'and records no device');
create temporary table allocated (label text, port int);
grant all on allocated to service_role;
select is(pg_temp.try_as('service', format($$insert into allocated select 'first', port
    from private.allocate_device_port(%L, %L, 'de000000-0000-4000-8000-00000000d001', 'Pixel', 'de',
    '10.0.0.7', 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'ok:1',
  'the right credentials allocate a port');
select is((select port from allocated where label = 'first'), 20000, 'the lowest free port of the pool');
select is((select owner_user_id from public.devices where uuid = 'de000000-0000-4000-8000-00000000d001'),
  pg_temp.uid('a'), 'the device is recorded for the bundle''s owner');
select is((select host(ip) from public.device_status where device_uuid = 'de000000-0000-4000-8000-00000000d001'),
  '10.0.0.7', 'the caller''s address is kept for IP attribution');
select is(pg_temp.try_as('service', format($$insert into allocated select 'again', port
    from private.allocate_device_port(%L, %L, 'de000000-0000-4000-8000-00000000d001', 'Renamed', null,
    '10.0.0.7', 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'ok:1',
  'allocating the same uuid again succeeds');
select is((select port from allocated where label = 'again'), 20000, 'and gives the same port');
select is((select name from public.devices where uuid = 'de000000-0000-4000-8000-00000000d001'), 'Renamed',
  'renaming through allocate keeps the port');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d001', 'stolen', null, null, 20000, 20009)$$,
    (:'b_bundle')::jsonb ->> 'bundle_id', (:'b_bundle')::jsonb ->> 'password')), 'error:42501',
  'another account''s bundle may not take over the device');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d002', 'second', null, null, 20000, 20000)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'error:53400',
  'an exhausted pool is reported, not overflowed');

select is(pg_temp.value_as('service', format($$select created::text from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d001', 'Renamed', null, null, 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'false',
  'an existing port is reported as not created');
select is(pg_temp.value_as('service', format($$select port || ':' || created from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d003', 'third', null, null, 20000, 20009, array[20001, 20002])$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), '20003:true',
  'ports the proxy cannot open on its host are skipped for a new device');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d004', 'fourth', null, null, 20000, 20009, '{}', 2)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'error:54000',
  'an account holding its limit of ports gets no more');
select is(pg_temp.try_as('service', $$select private.release_device_port(
    'de000000-0000-4000-8000-00000000d003', 20003)$$), 'ok:1', 'the proxy gives back a port it cannot open');
select is((select count(*)::int from public.device_ports where port = 20003), 0, 'and the port is free again');
select is(pg_temp.try_as('a', $$select private.release_device_port(
    'de000000-0000-4000-8000-00000000d001', 20000)$$), 'error:42501', 'API users may not release ports');

-- Ports through the API.
select is(pg_temp.try_as('a', 'select * from public.device_ports'), 'ok:1', 'the owner sees the device''s port');
select is(pg_temp.try_as('b', 'select * from public.device_ports'), 'ok:0', 'another member sees no port');
select is(pg_temp.try_as('a', $$update public.device_ports set port = 20005$$), 'error:42501',
  'a member may not move a port');

-- Revoking.
select is(pg_temp.try_as('a', format('select public.revoke_proxy_bundle(%L)',
  (:'a_bundle')::jsonb ->> 'bundle_id')), 'ok:1', 'the owner revokes the bundle');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000d001', 'x', null, null, 20000, 20009)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'ok:0',
  'a revoked bundle allocates nothing');

select * from finish();
rollback;
