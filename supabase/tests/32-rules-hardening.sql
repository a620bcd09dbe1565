-- pgTAP: defence in depth around the policies: API roles hold no TRUNCATE/REFERENCES/TRIGGER on
-- any public table, a resumer cannot record someone else as resumed_by, and a malformed
-- retention setting neither drops data nor breaks the partition job.
begin;
create extension if not exists pgtap with schema extensions;
select plan(7);

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

insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a'));
insert into public.breakpoint_events (id, device_uuid, phase, pattern, held_at)
values (990301, 'de000000-0000-4000-8000-0000000000a1', 'request', '*', now() - interval '1 minute');

select is(
  pg_temp.try_as('a', format(
    'update public.breakpoint_events set resolution = ''continue'', resumed_by = %L where id = 990301',
    pg_temp.uid('b'))),
  'ok:1', 'a member resumes a held event on their device');
select is((select resumed_by from public.breakpoint_events where id = 990301), pg_temp.uid('a'),
  'resumed_by records the caller, not the id they sent');

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
