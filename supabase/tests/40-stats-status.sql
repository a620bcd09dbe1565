-- pgTAP: the stats and status feeds: both snapshot tables hold one row at most and are read only
-- with stats:view / status:view and written by no API role; get_stats needs stats:view; the
-- running counters follow inserts, deletes and dropped partitions; the cron job exists.
begin;
create extension if not exists pgtap with schema extensions;
select plan(27);

\ir helpers/actors.psql

insert into public.roles (slug, name) values ('pgtap_stats', 'stats'), ('pgtap_status', 'status');
insert into public.role_capabilities (role_id, section, action)
select id, case slug when 'pgtap_stats' then 'stats' else 'status' end, 'view'
from public.roles where slug in ('pgtap_stats', 'pgtap_status');
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('viewer'), id from public.roles where slug = 'pgtap_stats';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_status';
select private.refresh_service_stats();
insert into public.service_status (id, snapshot) values (1, '{"overall":"ok"}')
on conflict (id) do update set snapshot = excluded.snapshot;

select policies_are('public', 'service_stats', array['service_stats_select'],
  'service_stats has only a select policy');
select policies_are('public', 'service_status', array['service_status_select'],
  'service_status has only a select policy');
select throws_ok($$insert into public.service_stats (id, snapshot) values (2, '{}')$$, '23514', null,
  'service_stats holds only the row id = 1');
select throws_ok($$insert into public.service_status (id, snapshot) values (2, '{}')$$, '23514', null,
  'service_status holds only the row id = 1');

select is(pg_temp.try_as('admin', 'select * from public.service_stats'), 'ok:1', 'an admin reads the stats row');
select is(pg_temp.try_as('viewer', 'select * from public.service_stats'), 'ok:1', 'stats:view reads the stats row');
select is(pg_temp.try_as('b', 'select * from public.service_stats'), 'ok:0', 'status:view alone reads no stats row');
select is(pg_temp.try_as('a', 'select * from public.service_stats'), 'ok:0', 'a member reads no stats row');
select is(pg_temp.try_as('b', 'select * from public.service_status'), 'ok:1', 'status:view reads the status row');
select is(pg_temp.try_as('viewer', 'select * from public.service_status'), 'ok:0', 'stats:view alone reads no status row');
select is(pg_temp.try_as('anon', 'select * from public.service_status'), 'error:42501', 'anon cannot read the status row');
select is(pg_temp.try_as('admin', $$update public.service_stats set snapshot = '{}'$$), 'error:42501',
  'not even an admin writes the stats row over the API');
select is(pg_temp.try_as('admin', $$update public.service_status set snapshot = '{}'$$), 'error:42501',
  'not even an admin writes the status row over the API');
select is(pg_temp.try_as('service', $$update public.service_status set snapshot = '{"overall":"degraded"}'$$), 'ok:1',
  'the service role writes the status row');

select is(pg_temp.value_as('viewer', $$select (public.get_stats() ? 'total_entries')::text$$), 'true',
  'get_stats answers with stats:view');
select is(pg_temp.value_as('a', 'select public.get_stats()::text'), 'error:42501',
  'get_stats refuses a member without stats:view');
select is(pg_temp.value_as('anon', 'select public.get_stats()::text'), 'error:42501', 'get_stats refuses anon');

-- Counters: an insert statement, an update, a delete statement, a fold, and a dropped partition.
create function pg_temp.total() returns bigint language sql
as $$ select (private.compute_stats() ->> 'total_entries')::bigint $$;
create temp table before_counts as
select pg_temp.total() as total,
       (private.compute_stats() ->> 'entries_1h')::bigint as last_hour,
       coalesce((private.compute_stats() -> 'source_mix' ->> 'pgtap-src')::bigint, 0) as source;
insert into public.entries (payload)
select jsonb_build_object('host', 'counted.example', 'statusCode', 404, 'source', 'pgtap-src')
from generate_series(1, 5);
select is(pg_temp.total() - (select total from before_counts), 5::bigint,
  'one insert statement of five rows adds five to the running total');
select is((private.compute_stats() ->> 'entries_1h')::bigint - (select last_hour from before_counts), 5::bigint,
  'and five to the last hour');
select is((private.compute_stats() -> 'source_mix' ->> 'pgtap-src')::bigint, 5::bigint,
  'and to its capture source');
delete from public.entries where host = 'counted.example' and ctid in (
  select ctid from public.entries where host = 'counted.example' limit 2);
select is(pg_temp.total() - (select total from before_counts), 3::bigint,
  'a delete subtracts what it removed');
select is(pg_temp.total(), (select count(*) from public.entries),
  'the running total equals a full count');
update public.entries set ts = ts - interval '3 weeks' where host = 'counted.example';
select is((private.compute_stats() ->> 'entries_1h')::bigint - (select last_hour from before_counts), 0::bigint,
  'an update that moves captures out of the last hour takes them out of entries_1h');
select private.fold_entry_counts();
select is((select count(*) from private.entry_count_deltas), 0::bigint, 'a fold empties the delta log');
select is(pg_temp.total(), (select count(*) from public.entries),
  'and the total still equals a full count after it');

select private.create_entries_partitions(now() - interval '60 weeks', now() - interval '59 weeks');
insert into public.entries (ts, payload) values (now() - interval '60 weeks', '{"host":"old.example"}');
update public.settings_global set data = data || '{"entries_retention_weeks": 10}' where id = 1;
select ok(private.drop_expired_entries_partitions() >= 1, 'retention drops the old partition');
select is(pg_temp.total(), (select count(*) from public.entries),
  'and the running total still equals a full count');

select * from finish();
rollback;
