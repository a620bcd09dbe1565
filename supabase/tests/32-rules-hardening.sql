-- pgTAP: defence in depth around the policies: API roles hold no TRUNCATE/REFERENCES/TRIGGER on
-- any public table nor any sequence right; members never choose an entry id; the database owns
-- resume records and attribution columns; device tokens stay their owner's; and a malformed
-- retention setting neither drops data nor breaks the partition job.
begin;
create extension if not exists pgtap with schema extensions;
select plan(19);

\ir helpers/actors.psql

select is(
  (select array_agg(format('%s %s %s', r.rolname, c.relname, p.privilege) order by 1)
   from pg_class c
   cross join (values ('anon'), ('authenticated')) as r (rolname)
   cross join (values ('TRUNCATE'), ('REFERENCES'), ('TRIGGER')) as p (privilege)
   where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
     and has_table_privilege(r.rolname, c.oid, p.privilege)),
  null,
  'anon and authenticated hold no TRUNCATE, REFERENCES or TRIGGER on any public table');
select ok(has_table_privilege('service_role', 'public.entries', 'TRUNCATE'),
  'the service role keeps TRUNCATE for maintenance');
select is(
  (select array_agg(format('%s %s', r.rolname, c.relname) order by 1)
   from pg_class c cross join (values ('anon'), ('authenticated')) as r (rolname)
   where c.relnamespace = 'public'::regnamespace and c.relkind = 'S'
     and has_sequence_privilege(r.rolname, c.oid, 'USAGE,SELECT,UPDATE')),
  null, 'anon and authenticated hold no right on any public sequence');

insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a'));
insert into public.breakpoint_events (id, device_uuid, phase, pattern, held_at)
values (990301, 'de000000-0000-4000-8000-0000000000a1', 'request', '*', now() - interval '1 minute');

select is(
  pg_temp.try_as('a', format(
    'update public.breakpoint_events set resolution = ''continue'', resumed_by = %L, '
    'resumed_at = now() + interval ''1 year'' where id = 990301', pg_temp.uid('b'))),
  'ok:1', 'a member resumes a held event on their device');
select is((select resumed_by from public.breakpoint_events where id = 990301), pg_temp.uid('a'),
  'resumed_by records the caller, not the id they sent');
select ok((select resumed_at <= now() from public.breakpoint_events where id = 990301),
  'resumed_at is the server''s clock, not the time they sent');
select is(pg_temp.try_as('a', 'update public.breakpoint_events set resumed_by = null where id = 990301'),
  'error:23514', 'an API caller cannot erase who resumed an event');
select is(pg_temp.try_as('a', $$insert into public.breakpoint_events
    (device_uuid, phase, pattern, resolution, resumed_at, held_at)
    values ('de000000-0000-4000-8000-0000000000a1', 'request', 'x', 'continue', '2020-01-02', '2020-01-01')$$),
  'error:23514', 'an API caller cannot create an event that is born resumed');

select is(pg_temp.try_as('a', $$insert into public.entries (id, device_uuid, payload)
    values (9223372036854775807, 'de000000-0000-4000-8000-0000000000a1', '{"host":"pinned.example"}')$$),
  'error:42501', 'a member cannot choose the id of an imported entry');
select is(pg_temp.try_as('a', $$insert into public.entries (device_uuid, payload)
    values ('de000000-0000-4000-8000-0000000000a1', '{"host":"import.example"}')$$),
  'ok:1', 'but may import an entry with a generated id');

insert into public.workspaces (id, owner_user_id, name)
values ('3b000000-0000-4000-8000-0000000003a1', pg_temp.uid('a'), 'pgtap ws');
select is(pg_temp.try_as('a', format($$insert into public.workspace_entries
    (workspace_id, entry_id, entry_ts, added_by)
    select '3b000000-0000-4000-8000-0000000003a1', e.id, e.ts, %L from public.entries e
    where e.host = 'import.example'$$, pg_temp.uid('admin'))), 'ok:1',
  'a member links their entry into their workspace');
select is((select added_by from public.workspace_entries
           where workspace_id = '3b000000-0000-4000-8000-0000000003a1'), pg_temp.uid('a'),
  'added_by records the caller, not the id they sent');
select is(pg_temp.try_as('a', format($$insert into public.settings_device (device_uuid, updated_by)
    values ('de000000-0000-4000-8000-0000000000a1', %L)$$, pg_temp.uid('admin'))), 'ok:1',
  'a member creates settings for their device');
select is((select updated_by from public.settings_device
           where device_uuid = 'de000000-0000-4000-8000-0000000000a1'), pg_temp.uid('a'),
  'updated_by records the caller');

insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b'));
select is(pg_temp.value_claims(
    jsonb_build_object('sub', pg_temp.uid('a'), 'role', 'authenticated',
                       'device_uuid', 'de000000-0000-4000-8000-0000000000b1'),
    $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000b1')::text$$),
  'error:PT404', 'a device token for a device its subject does not own reads nothing');
select is(pg_temp.value_claims(
    jsonb_build_object('sub', pg_temp.uid('none'), 'role', 'authenticated',
                       'device_uuid', 'de000000-0000-4000-8000-0000000000b1'),
    $$select public.effective_settings_for_device('de000000-0000-4000-8000-0000000000b1')::text$$),
  'error:42501', 'a device token of a user without settings:view reads nothing');

select private.create_entries_partitions(now() - interval '60 weeks', now() - interval '59 weeks');
insert into public.entries (ts, device_uuid, payload) values
  (now() - interval '60 weeks', null, '{"host":"old.example"}');
update public.settings_global set data = data || '{"entries_retention_weeks":"two"}' where id = 1;
select is(private.drop_expired_entries_partitions(), 0,
  'a retention that is not a whole number of weeks drops nothing');
select lives_ok('select private.maintain_entries_partitions()',
  'and the daily job keeps running');
select is((select count(*) from public.entries where host = 'old.example'), 1::bigint,
  'the old capture is still there');

select * from finish();
rollback;
