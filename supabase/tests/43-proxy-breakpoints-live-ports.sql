-- pgTAP (docs/proxy.md "Breakpoints" and "Devices added anywhere"): breakpoint rows a proxy holds
-- (proxy_instance, closed_by_proxy, which API callers may not set or change; a modify names only
-- its phase's fields), the notifications the proxy listens to (a resumed held row, and a deleted
-- one, alone or with its device), and ports for devices inserted through the API (from the
-- registered pool, under the /allocate lock, never past the per-account cap).
begin;
create extension if not exists pgtap with schema extensions;
select plan(31);

\ir helpers/actors.psql

-- A pool of three ports, whatever a running proxy registered: the test owns it.
delete from private.proxy_port_pool;

insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000043a1', 'pgtap 43 a1', pg_temp.uid('a'));
insert into public.breakpoint_events (id, device_uuid, phase, pattern, proxy_instance) values
  (994301, 'de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'proxy-1'),
  (994302, 'de000000-0000-4000-8000-0000000043a1', 'response', 'x', 'proxy-1'),
  (994303, 'de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'proxy-1'),
  (994304, 'de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'proxy-1'),
  (994305, 'de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'proxy-1');

-- Held rows and the proxy's fields
select is(pg_temp.try_as('a', $$insert into public.breakpoint_events (device_uuid, phase, pattern, proxy_instance)
  values ('de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'proxy-1')$$), 'error:23514',
  'an API caller may not name a proxy instance on a new event');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set proxy_instance = 'proxy-2' where id = 994301$$),
  'error:23514', 'the holding instance never changes');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'abort', closed_by_proxy = 'timeout'
  where id = 994301$$), 'error:23514', 'an API caller may not claim the proxy closed an event');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'modify',
  modified_message = '{"status": 201}' where id = 994301$$), 'error:22023',
  'a request modify may not carry response fields');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'modify',
  modified_message = '{"url": "/x"}' where id = 994302$$), 'error:22023',
  'a response modify may not carry request fields');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'modify',
  modified_message = '"body"' where id = 994302$$), 'error:22023',
  'a modified message is an object');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'modify',
  modified_message = '{"method": "PUT", "url": "/y", "headers": [], "body": "b"}' where id = 994301$$), 'ok:1',
  'a request modify with method, url, headers and body is accepted');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resolution = 'modify',
  modified_message = '{"status": 418, "headers": {}, "body": null}' where id = 994302$$), 'ok:1',
  'a response modify with status, headers and body is accepted');
select is(pg_temp.try_as('service', $$update public.breakpoint_events set resolution = 'continue',
  closed_by_proxy = 'timeout' where id = 994303$$), 'ok:1', 'the proxy (service role) records a timeout');
select is((select (resolution, closed_by_proxy, resumed_at is not null)::text
  from public.breakpoint_events where id = 994303), '(continue,timeout,t)',
  'a timed-out event is resumed, continued, and says why');
select throws_ok($$insert into public.breakpoint_events (device_uuid, phase, pattern, closed_by_proxy)
  values ('de000000-0000-4000-8000-0000000043a1', 'request', 'x', 'timeout')$$, '23514', null,
  'closed_by_proxy needs a resumed event');

-- Notifications the proxy listens to
select has_trigger('public', 'breakpoint_events', 'breakpoint_events_notify_resumed',
  'resumes notify proxy_breakpoint_resumed');
select trigger_is('public', 'breakpoint_events', 'breakpoint_events_notify_deleted',
  'private', 'notify_breakpoint_deleted', 'deleting a held row notifies proxy_breakpoint_deleted');
select matches(
  (select pg_get_triggerdef(t.oid) from pg_trigger t
   where t.tgname = 'breakpoint_events_notify_deleted'),
  'AFTER DELETE ON public\.breakpoint_events FOR EACH ROW WHEN \(\(\(old\.resumed_at IS NULL\) AND \(old\.proxy_instance IS NOT NULL\)\)\)',
  'per row (a device delete names each held row it cascades to), only for rows a proxy holds');
select matches(prosrc, 'pg_notify\(''proxy_breakpoint_deleted'', old\.id::text \|\| '' '' \|\| old\.proxy_instance\)',
  'the payload is "<id> <instance>", as for a resume')
  from pg_proc where oid = 'private.notify_breakpoint_deleted()'::regprocedure;
select is(pg_temp.try_as('b', 'delete from public.breakpoint_events where id = 994304'), 'ok:0',
  'another member cannot delete a held row (RLS: no row)');
select is(pg_temp.try_as('a', 'delete from public.breakpoint_events where id = 994304'), 'ok:1',
  'the device''s owner deletes a held row (the proxy then aborts its client)');
select is(pg_temp.try_as('a', $$delete from public.devices where uuid = 'de000000-0000-4000-8000-0000000043a1'$$),
  'ok:1', 'the owner deletes a device with a held row');
select is((select count(*)::int from public.breakpoint_events where id between 994301 and 994305), 0,
  'its breakpoint rows went with it (each firing the row trigger)');
select has_trigger('public', 'settings_global', 'settings_global_notify_proxy',
  'global settings changes notify the proxy');
select has_trigger('public', 'settings_device', 'settings_device_notify_proxy',
  'device settings changes notify the proxy');
select has_trigger('public', 'device_ports', 'device_ports_notify_proxy',
  'port changes notify the proxy');

-- Ports for devices added through the API
select is(pg_temp.try_as('a', $$insert into public.devices (uuid, name)
  values ('de000000-0000-4000-8000-0000000043b1', 'before pool')$$), 'ok:1',
  'a device is inserted before any proxy registered a pool');
select is((select count(*)::int from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000043b1'), 0, 'without a pool it gets no port');
select is(pg_temp.try_as('a', 'select private.register_proxy_port_pool(64001, 64003, 2)'), 'error:42501',
  'an API caller may not register the pool');
select is(pg_temp.value_as('service', 'select private.register_proxy_port_pool(64001, 64003, 2)'), null,
  'the proxy registers its pool (nothing was registered before)');
select is(pg_temp.try_as('a', $$insert into public.devices (uuid, name) values
  ('de000000-0000-4000-8000-0000000043b2', 'rest 1'), ('de000000-0000-4000-8000-0000000043b3', 'rest 2'),
  ('de000000-0000-4000-8000-0000000043b4', 'rest 3')$$), 'ok:3', 'a member inserts three devices over the API');
select results_eq($$select device_uuid::text, port from public.device_ports
  where device_uuid::text like 'de000000-0000-4000-8000-0000000043b%' order by port$$,
  $$values ('de000000-0000-4000-8000-0000000043b1', 64001), ('de000000-0000-4000-8000-0000000043b2', 64002)$$,
  'the registration gives the older device its port, each new one the lowest free port, until the account''s cap (2)');
select is(pg_temp.try_as('b', $$insert into public.devices (uuid, name) values
  ('de000000-0000-4000-8000-0000000043c1', 'b 1'), ('de000000-0000-4000-8000-0000000043c2', 'b 2')$$), 'ok:2',
  'another member inserts two devices');
select results_eq($$select port from public.device_ports
  where device_uuid::text like 'de000000-0000-4000-8000-0000000043c%' order by port$$,
  $$values (64003)$$, 'a full pool leaves the last device without a port, and the insert succeeds');
insert into public.devices (uuid, name, owner_user_id)
  values ('de000000-0000-4000-8000-0000000043d1', 'by sql', pg_temp.uid('b'));
select is((select count(*)::int from public.device_ports
  where device_uuid = 'de000000-0000-4000-8000-0000000043d1'), 0,
  'an insert by SQL takes no port from a full pool either (SQL inserts take one too)');

select * from finish();
rollback;
