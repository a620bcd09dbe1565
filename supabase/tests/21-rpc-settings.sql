-- pgTAP: the RPCs expand_service_groups and effective_settings_for_device (deep merge, domain union
-- with group expansion, caller and device-token scope).
begin;
create extension if not exists pgtap with schema extensions;
select plan(33);

\ir helpers/actors.psql

-- Groups: g0 the admin's (named by the global settings), a1/a2 of a, b1 of b.
insert into public.service_groups (id, owner_user_id, name, ssl_proxy_domains) values
  ('5a000000-0000-4000-8000-0000000000d0', pg_temp.uid('admin'), 'pgtap g0', '{pay.test,*.z.test}'),
  ('5a000000-0000-4000-8000-0000000000a1', pg_temp.uid('a'), 'pgtap ga1', '{a.test,*.shared.test}'),
  ('5a000000-0000-4000-8000-0000000000a2', pg_temp.uid('a'), 'pgtap ga2', '{b2.test,a.test}'),
  ('5a000000-0000-4000-8000-0000000000b1', pg_temp.uid('b'), 'pgtap gb1', '{b.test}');
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000a2', 'pgtap a2', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000a3', 'pgtap a3', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
update public.settings_global set data = '{
  "env": {"LOG": "info", "KEEP": "g"},
  "proxy": {"port": 8080, "tls": {"min": "1.2", "ciphers": "default"}},
  "breakpoints": [{"pattern": "global.test/*"}],
  "ssl_proxy_domains": ["*.global.test"],
  "service_groups": ["5a000000-0000-4000-8000-0000000000d0"]}';
insert into public.settings_device (device_uuid, data) values
  ('de000000-0000-4000-8000-0000000000a1', '{
    "env": {"LOG": "debug", "DEV": "1"},
    "proxy": {"tls": {"min": "1.3"}},
    "service_groups": ["5a000000-0000-4000-8000-0000000000a1", "5a000000-0000-4000-8000-0000000000b1"]}'),
  ('de000000-0000-4000-8000-0000000000a3', '{
    "ssl_proxy_domains": "not a list",
    "service_groups": ["not-a-uuid", "5a000000-0000-4000-8000-0000000000a2"]}'),
  ('de000000-0000-4000-8000-0000000000b1', '{"ssl_proxy_domains": ["own.b.test"]}');

create function pg_temp.effective(who text, target text) returns text language sql
as $$ select pg_temp.value_as(who, format('select public.effective_settings_for_device(%L)', target)) $$;
-- Parses a value_as result; an error becomes {"error": "error:<SQLSTATE>"} so the test fails cleanly.
create function pg_temp.json(value text) returns jsonb language sql immutable
as $$ select case when value like 'error:%' then jsonb_build_object('error', value) else value::jsonb end $$;
create function pg_temp.expand(who text, ids text) returns text language sql
as $$ select pg_temp.value_as(who, format('select public.expand_service_groups(%L)', ids)) $$;

-- expand_service_groups
select is(pg_temp.expand('a', '{5a000000-0000-4000-8000-0000000000a1,5a000000-0000-4000-8000-0000000000a2}'),
  '{*.shared.test,a.test,b2.test}', 'expand_service_groups returns the sorted distinct union of the groups'' domains');
select is(pg_temp.expand('a', '{5a000000-0000-4000-8000-0000000000a1,5a000000-0000-4000-8000-0000000000b1}'),
  '{*.shared.test,a.test}', 'a group the caller cannot see adds nothing');
select is(pg_temp.expand('admin', '{5a000000-0000-4000-8000-0000000000a1,5a000000-0000-4000-8000-0000000000b1}'),
  '{*.shared.test,a.test,b.test}', 'an admin expands any group');
select is(pg_temp.expand('none', '{5a000000-0000-4000-8000-0000000000a1}'), '{}',
  'a user without services:view expands nothing');
select is(pg_temp.expand('a', '{}'), '{}', 'no group ids give no domains');
select is(pg_temp.expand('a', '{5a000000-0000-4000-8000-0000000000ff}'), '{}', 'an unknown group adds nothing');
select is(pg_temp.value_as('a', 'select public.expand_service_groups(null)'), 'error:22004',
  'expand_service_groups refuses null');
select is(pg_temp.expand('anon', '{5a000000-0000-4000-8000-0000000000a1}'), 'error:42501',
  'anon may not execute expand_service_groups');

-- effective_settings_for_device: merging
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) -> 'env',
  '{"LOG": "debug", "KEEP": "g", "DEV": "1"}'::jsonb, 'device settings win over global ones key by key');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) -> 'proxy',
  '{"port": 8080, "tls": {"min": "1.3", "ciphers": "default"}}'::jsonb, 'nested objects merge recursively');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) -> 'breakpoints',
  '[{"pattern": "global.test/*"}]'::jsonb, 'global keys the device does not set are kept');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) ->> 'device_uuid',
  'de000000-0000-4000-8000-0000000000a1', 'the result names the device');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) -> 'service_groups',
  '["5a000000-0000-4000-8000-0000000000a1", "5a000000-0000-4000-8000-0000000000b1"]'::jsonb,
  'the device''s service_groups replace the global ones');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a1')) -> 'ssl_proxy_domains',
  '["*.global.test", "*.shared.test", "a.test"]'::jsonb,
  'domains are the merged list plus the domains of the owner''s own groups the device names');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a2')) -> 'ssl_proxy_domains',
  '["*.global.test", "*.z.test", "pay.test"]'::jsonb,
  'groups named by the global settings expand for every device');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a2')) - 'device_uuid' - 'ssl_proxy_domains',
  (select data - 'ssl_proxy_domains' from public.settings_global), 'a device without overrides gets the global settings');
select is(pg_temp.json(pg_temp.effective('b', 'de000000-0000-4000-8000-0000000000b1')) -> 'ssl_proxy_domains',
  '["*.z.test", "own.b.test", "pay.test"]'::jsonb, 'a device''s own domain list replaces the global list');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a3')) -> 'service_groups',
  '["5a000000-0000-4000-8000-0000000000a2"]'::jsonb, 'service_groups entries that are not uuids are ignored');
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a3')) -> 'ssl_proxy_domains',
  '["a.test", "b2.test"]'::jsonb, 'a domain list that is not an array adds nothing');
update public.settings_global set data = '{}';
select is(pg_temp.json(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000a2')),
  '{"device_uuid": "de000000-0000-4000-8000-0000000000a2", "service_groups": [], "ssl_proxy_domains": []}'::jsonb,
  'with nothing configured the result holds only the device and empty lists');

-- effective_settings_for_device: who may ask
select is(pg_temp.effective('a', 'de000000-0000-4000-8000-0000000000b1'), 'error:PT404',
  'another user''s device is not found');
select is(pg_temp.json(pg_temp.effective('admin', 'de000000-0000-4000-8000-0000000000b1')) ->> 'device_uuid',
  'de000000-0000-4000-8000-0000000000b1', 'an admin reads any device''s settings');
select is(pg_temp.json(pg_temp.effective('viewer', 'de000000-0000-4000-8000-0000000000e1')) ->> 'device_uuid',
  'de000000-0000-4000-8000-0000000000e1', 'a viewer reads their own device''s settings');
select is(pg_temp.effective('none', 'de000000-0000-4000-8000-0000000000f1'), 'error:42501',
  'a user without settings:view may not read even their own device''s settings');
select is(pg_temp.effective('admin', 'de000000-0000-4000-8000-0000000000ff'), 'error:PT404',
  'an unknown device is not found');
select is(pg_temp.value_as('a', 'select public.effective_settings_for_device(null)'), 'error:22004',
  'effective_settings_for_device refuses null');
select is(pg_temp.effective('anon', 'de000000-0000-4000-8000-0000000000a1'), 'error:42501',
  'anon may not execute effective_settings_for_device');
select is(pg_temp.json(pg_temp.effective('service', 'de000000-0000-4000-8000-0000000000b1')) ->> 'device_uuid',
  'de000000-0000-4000-8000-0000000000b1', 'the service role reads any device''s settings');

-- Device tokens (claim device_uuid) read only their own device.
select is(pg_temp.value_claims(pg_temp.claims('a') || '{"device_uuid":"de000000-0000-4000-8000-0000000000a1"}',
  $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000a1') ->> 'device_uuid'$$),
  'de000000-0000-4000-8000-0000000000a1', 'a device token reads its own device''s settings');
select is(pg_temp.value_claims(pg_temp.claims('a') || '{"device_uuid":"de000000-0000-4000-8000-0000000000a1"}',
  $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000a2')$$),
  'error:42501', 'a device token may not read another device of the same owner');
select is(pg_temp.value_claims(pg_temp.claims('a') || '{"device_uuid":"de000000-0000-4000-8000-0000000000a1"}',
  $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000b1')$$),
  'error:42501', 'a device token may not read another user''s device');
select is(pg_temp.value_claims(pg_temp.claims('none') || '{"device_uuid":"de000000-0000-4000-8000-0000000000f1"}',
  $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000f1') ->> 'device_uuid'$$),
  'error:42501', 'a device token is its owner''s token: without settings:view it reads nothing');
select is(pg_temp.value_claims(pg_temp.claims('a') || '{"device_uuid":"de000000-0000-4000-8000-0000000000ff"}',
  $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000ff')$$),
  'error:PT404', 'a device token of a deleted device finds nothing');

select * from finish();
rollback;
