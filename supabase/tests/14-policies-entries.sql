-- pgTAP: entries policies (entries section, via device ownership): read, insert and delete own
-- captures; nobody but the service updates one; partitions are unreachable over the API.
begin;
create extension if not exists pgtap with schema extensions;
select plan(32);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now() - interval '1 week', now() + interval '1 week');
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
insert into public.entries (request_id, device_uuid, payload) values
  ('pgtap-a-1', 'de000000-0000-4000-8000-0000000000a1', '{"host":"a.example"}'),
  ('pgtap-a-2', 'de000000-0000-4000-8000-0000000000a1', '{"host":"a.example"}'),
  ('pgtap-b-1', 'de000000-0000-4000-8000-0000000000b1', '{"host":"b.example"}'),
  ('pgtap-v-1', 'de000000-0000-4000-8000-0000000000e1', '{"host":"v.example"}'),
  ('pgtap-n-1', 'de000000-0000-4000-8000-0000000000f1', '{"host":"n.example"}'),
  ('pgtap-null', null, '{"host":"proxy.example"}');
create function pg_temp.current_partition() returns text language sql stable
as $$ select 'private.entries_w' || to_char(private.entries_week_start(now()) at time zone 'UTC', 'YYYYMMDD') $$;

select ok((select relrowsecurity from pg_class where oid = 'public.entries'::regclass),
  'entries has row level security enabled');
select policies_are('public', 'entries', array['entries_select', 'entries_insert', 'entries_delete'],
  'entries has exactly a select, an insert and a delete policy');

-- Reading
select is(pg_temp.try_as('admin', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:6',
  'an admin sees every entry, including unattributed ones');
select is(pg_temp.try_as('a', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:2',
  'a member sees only the entries of their own devices');
select is(pg_temp.try_as('b', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:1',
  'another member sees only the entries of their own device');
select is(pg_temp.try_as('viewer', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:1',
  'a viewer sees the entries of their own device');
select is(pg_temp.try_as('none', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:0',
  'a user without entries:view sees no entry, not even of their own device');
select is(pg_temp.try_as('service', $$select * from public.entries where request_id like 'pgtap-%'$$), 'ok:6',
  'the service role sees every entry');
select is(pg_temp.try_as('anon', 'select * from public.entries'), 'error:42501', 'anon may not read entries');

-- Inserting
select is(pg_temp.try_as('a', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-a-3', 'de000000-0000-4000-8000-0000000000a1', '{}')$$), 'ok:1',
  'a member records an entry for their own device');
select is(pg_temp.try_as('a', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-a-x', 'de000000-0000-4000-8000-0000000000b1', '{}')$$), 'error:42501',
  'a member may not record an entry for another user''s device');
select is(pg_temp.try_as('a', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-a-y', null, '{}')$$), 'error:42501', 'a member may not record an unattributed entry');
select is(pg_temp.try_as('viewer', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-v-2', 'de000000-0000-4000-8000-0000000000e1', '{}')$$), 'error:42501',
  'a viewer may not record an entry for their own device');
select is(pg_temp.try_as('none', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-n-2', 'de000000-0000-4000-8000-0000000000f1', '{}')$$), 'error:42501',
  'a user without a role may not record an entry');
select is(pg_temp.try_as('anon', $$insert into public.entries (payload) values ('{}')$$), 'error:42501',
  'anon may not record an entry');
select is(pg_temp.try_as('admin', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-b-2', 'de000000-0000-4000-8000-0000000000b1', '{}')$$), 'ok:1',
  'an admin records an entry for any device');
select is(pg_temp.try_as('admin', $$insert into public.entries (request_id, device_uuid, payload)
  values ('pgtap-null-2', null, '{}')$$), 'ok:1', 'an admin records an unattributed entry');

-- Updating: captures are immutable over the API.
select is(pg_temp.try_as('a', $$update public.entries set kind = 'error' where request_id = 'pgtap-a-1'$$),
  'error:42501', 'a member may not change their own entry');
select is(pg_temp.try_as('admin', $$update public.entries set kind = 'error' where request_id = 'pgtap-b-1'$$),
  'error:42501', 'an admin may not change an entry');
select is(pg_temp.try_as('anon', $$update public.entries set kind = 'error'$$), 'error:42501',
  'anon may not change an entry');
select is(pg_temp.try_as('service', $$update public.entries set kind = 'error' where request_id = 'pgtap-b-1'$$),
  'ok:1', 'the service role may correct an entry');

-- Deleting
select is(pg_temp.try_as('a', $$delete from public.entries where request_id = 'pgtap-b-1'$$), 'ok:0',
  'a member deletes no entry of another user''s device');
select is(pg_temp.try_as('a', $$delete from public.entries where request_id = 'pgtap-null'$$), 'ok:0',
  'a member deletes no unattributed entry');
select is(pg_temp.try_as('viewer', $$delete from public.entries where request_id = 'pgtap-v-1'$$), 'error:42501',
  'a viewer may not delete an entry of their own device');
select is(pg_temp.try_as('none', $$delete from public.entries where request_id = 'pgtap-n-1'$$), 'error:42501',
  'a user without a role may not delete an entry');
select is(pg_temp.try_as('anon', $$delete from public.entries$$), 'error:42501', 'anon may not delete entries');
select is(pg_temp.try_as('a', $$delete from public.entries where request_id = 'pgtap-a-1'$$), 'ok:1',
  'a member deletes an entry of their own device');
select is(pg_temp.try_as('admin', $$delete from public.entries where request_id in ('pgtap-b-1', 'pgtap-null')$$),
  'ok:2', 'an admin deletes any entry');

-- Partitions carry no RLS of their own, so nobody but the owner may touch them.
select is(pg_temp.try_as('admin', format('select * from %s', pg_temp.current_partition())), 'error:42501',
  'an admin may not read a partition directly');
select is(pg_temp.try_as('a', format('select * from %s', pg_temp.current_partition())), 'error:42501',
  'a member may not read a partition directly');
select is(pg_temp.try_as('anon', format('select * from %s', pg_temp.current_partition())), 'error:42501',
  'anon may not read a partition directly');
select is(pg_temp.try_as('a', format($$insert into %s (ts, payload) values (now(), '{}')$$,
  pg_temp.current_partition())), 'error:42501', 'a member may not write a partition directly');

select * from finish();
rollback;
