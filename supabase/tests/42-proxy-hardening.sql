-- pgTAP: the proxy's hardening in the database (docs/proxy.md "Listeners" and "Devices, ports and
-- PAC"): a device port bound to the address that allocated it (and moved by the next /allocate),
-- bundle credentials checked for the proxy's Proxy-Authorization, the per-account port cap and its
-- default, the /allocate failure counter, and revoke_proxy_bundle answering 404 (not 500) for a
-- bundle the caller cannot see.
begin;
create extension if not exists pgtap with schema extensions;
select plan(27);

\ir helpers/actors.psql

delete from private.proxy_ca;
select private.register_proxy_ca('-----BEGIN CERTIFICATE-----pgtap', 'AA:BB');
select pg_temp.value_as('a', $$select public.issue_proxy_bundle('a phone')::text$$) as a_bundle \gset
select pg_temp.value_as('b', $$select public.issue_proxy_bundle('b phone')::text$$) as b_bundle \gset

-- Binding.
select is(pg_temp.value_as('service', format($$select port::text from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e001', 'Pixel', null, '10.0.0.7', 20000, 20099)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), '20000',
  'a device gets a port');
select is((select host(allocated_from) from public.device_ports where device_uuid = 'de000000-0000-4000-8000-00000000e001'),
  '10.0.0.7', 'the port is bound to the address that allocated it');
select is(pg_temp.value_as('service', format($$select port::text from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e001', 'Pixel', null, '192.0.2.9', 20000, 20099)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), '20000',
  'allocating again from another network keeps the port');
select is((select host(allocated_from) from public.device_ports where device_uuid = 'de000000-0000-4000-8000-00000000e001'),
  '192.0.2.9', 'and moves the binding there');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e001', 'Stolen', null, '198.51.100.1', 20000, 20099)$$,
    (:'b_bundle')::jsonb ->> 'bundle_id', (:'b_bundle')::jsonb ->> 'password')), 'error:42501',
  'another account cannot rebind the device');
select is((select host(allocated_from) from public.device_ports where device_uuid = 'de000000-0000-4000-8000-00000000e001'),
  '192.0.2.9', 'and the binding stays');

-- Proxy-Authorization credentials.
select is(pg_temp.value_as('service', format($$select private.proxy_bundle_owner(%L, %L)::text$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), pg_temp.uid('a')::text,
  'a live bundle names its owner');
select is(pg_temp.value_as('service', format($$select coalesce(private.proxy_bundle_owner(%L, 'guess')::text, 'none')$$,
    (:'a_bundle')::jsonb ->> 'bundle_id')), 'none', 'a wrong secret names nobody');
select is(pg_temp.value_as('a', format($$select private.proxy_bundle_owner(%L, %L)::text$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'error:42501',
  'API users may not test bundle credentials');

-- The cap.
select is((select pg_get_function_arguments('private.allocate_device_port'::regproc) like '%per_owner_limit integer DEFAULT 20'),
  true, 'the per-account cap defaults to 20 ports');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e002', 'second', null, null, 20000, 20099, '{}', 2)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'ok:1',
  'an account under its cap gets another port');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e003', 'third', null, null, 20000, 20099, '{}', 2)$$,
    (:'a_bundle')::jsonb ->> 'bundle_id', (:'a_bundle')::jsonb ->> 'password')), 'error:54000',
  'an account at its cap gets none');
select is(pg_temp.try_as('service', format($$select * from private.allocate_device_port(%L, %L,
    'de000000-0000-4000-8000-00000000e004', 'other', null, null, 20000, 20099, '{}', 2)$$,
    (:'b_bundle')::jsonb ->> 'bundle_id', (:'b_bundle')::jsonb ->> 'password')), 'ok:1',
  'while another account still gets ports');

-- /allocate failures per address: a call is counted before it is answered.
select is(pg_temp.value_as('service', $$select retry_after::text from private.begin_proxy_allocate_attempt('203.0.113.5', 2)$$), '0',
  'an address without failures may try (its call is counted)');
select is(pg_temp.value_as('service', $$select retry_after::text from private.begin_proxy_allocate_attempt('203.0.113.5', 2)$$), '0',
  'and once more in the same minute');
select ok(pg_temp.value_as('service', $$select retry_after::text from private.begin_proxy_allocate_attempt('203.0.113.5', 2)$$)::int between 1 and 60,
  'an address at its limit waits for the window''s end, and is not counted further');
select is((select failures from private.proxy_allocate_failures where client_ip = '203.0.113.5'),
  2, 'a refused call takes no place');
select is(pg_temp.try_as('service', $$select private.forgive_proxy_allocate_attempt('203.0.113.5', date_trunc('minute', now()) - interval '1 minute')$$),
  'ok:1', 'a place given back in another minute');
select is((select failures from private.proxy_allocate_failures where client_ip = '203.0.113.5'),
  2, 'frees nothing in this one');
select is(pg_temp.try_as('service', $$select private.forgive_proxy_allocate_attempt('203.0.113.5', date_trunc('minute', now()))$$),
  'ok:1', 'a call that succeeded gives its place back');
select is(pg_temp.value_as('service', $$select retry_after::text from private.begin_proxy_allocate_attempt('203.0.113.5', 2)$$), '0',
  'so the address may try again');
select is(pg_temp.value_as('service', $$select retry_after::text from private.begin_proxy_allocate_attempt('203.0.113.6', 2)$$), '0',
  'other addresses are not affected');
select is(pg_temp.try_as('a', $$select private.begin_proxy_allocate_attempt('203.0.113.7', 2)$$), 'error:42501',
  'API users may not count calls');
select is(pg_temp.try_as('a', 'select * from private.proxy_allocate_failures'), 'error:42501',
  'API users may not read the failure counters');

-- revoke_proxy_bundle: 404 through PostgREST's PGRST mechanism, for missing and foreign alike.
create function pg_temp.revoke_status(who text, bundle uuid) returns text language plpgsql
as $$
declare
  detail text;
begin
  perform set_config('request.jwt.claims', pg_temp.claims(who)::text, true);
  perform set_config('role', 'authenticated', true);
  begin
    perform public.revoke_proxy_bundle(bundle);
    detail := 'ok';
  exception when sqlstate 'PGRST' then
    get stacked diagnostics detail = pg_exception_detail;
    detail := (detail::jsonb ->> 'status');
  end;
  perform set_config('role', 'none', true);
  return detail;
end
$$;
select is(pg_temp.revoke_status('a', ((:'b_bundle')::jsonb ->> 'bundle_id')::uuid), '404',
  'revoking another user''s bundle answers 404 (PostgREST''s PGRST detail), not 500');
select is(pg_temp.revoke_status('a', '00000000-0000-4000-8000-000000000000'), '404',
  'revoking a bundle that does not exist answers the same 404');
select is(pg_temp.revoke_status('a', ((:'a_bundle')::jsonb ->> 'bundle_id')::uuid), 'ok',
  'the owner still revokes their own bundle');

select * from finish();
rollback;
