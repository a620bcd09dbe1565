-- pgTAP: the RPCs entries_filtered_list and entries_filtered_count: caller scope, newest-first
-- keyset paging, lim bounds, literal case-insensitive search, and the host/device/workspace filters.
begin;
create extension if not exists pgtap with schema extensions;
select plan(50);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now(), now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000a2', 'pgtap a2', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
insert into public.entries (id, device_uuid, payload)
select e.id, e.device_uuid::uuid,
  jsonb_build_object('host', e.host, 'path', e.path, 'url', 'https://' || e.host || e.path || e.query)
from (values
  (990201, 'de000000-0000-4000-8000-0000000000a1', 'api.pgtap.test', '/v1/users', ''),
  (990202, 'de000000-0000-4000-8000-0000000000a1', 'cdn.pgtap.test', '/img/LOGO.png', ''),
  (990203, 'de000000-0000-4000-8000-0000000000a2', 'api.pgtap.test', '/v1/100%_done', ''),
  (990205, 'de000000-0000-4000-8000-0000000000a1', 'api.pgtap.test', '/v1/100x1done', '?q=Needle'),
  (990206, 'de000000-0000-4000-8000-0000000000b1', 'api.pgtap.test', '/v1/b', ''),
  (990207, null, 'api.pgtap.test', '/v1/unattributed', ''),
  (990208, 'de000000-0000-4000-8000-0000000000f1', 'api.pgtap.test', '/v1/n', '')
) as e (id, device_uuid, host, path, query);
insert into public.workspaces (id, name, owner_user_id) values
  ('3b000000-0000-4000-8000-0000000000a1', 'pgtap wa', pg_temp.uid('a')),
  ('3b000000-0000-4000-8000-0000000000b1', 'pgtap wb', pg_temp.uid('b'));
insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
select w.id, e.id, e.ts from public.entries e
join (values ('3b000000-0000-4000-8000-0000000000a1'::uuid, 990201), ('3b000000-0000-4000-8000-0000000000a1', 990203),
             ('3b000000-0000-4000-8000-0000000000b1', 990206)) as w (id, entry_id) on w.entry_id = e.id;

-- The ids entries_filtered_list returns to `who` for the given arguments, in result order.
create function pg_temp.ids(who text, args text) returns text language sql
as $$ select pg_temp.value_as(who, format(
  $q$select coalesce(string_agg(l.id::text, ',' order by l.ordinality), '')
     from public.entries_filtered_list(%s) with ordinality as l$q$, args)) $$;
create function pg_temp.total(who text, args text) returns text language sql
as $$ select pg_temp.value_as(who, format('select public.entries_filtered_count(%s)', args)) $$;

-- Scope
select is(pg_temp.ids('a', ''), '990205,990203,990202,990201',
  'a member lists the entries of their own devices, newest first');
select is(pg_temp.ids('b', ''), '990206', 'another member lists only the entries of their device');
select is(pg_temp.ids('none', ''), '', 'a user without entries:view lists nothing, without an error');
select is(pg_temp.ids('viewer', ''), '', 'a viewer without devices lists nothing');
select is(pg_temp.ids('admin', $$hosts => '{api.pgtap.test}'$$), '990208,990207,990206,990205,990203,990201',
  'an admin lists every device''s entries, unattributed ones included');
select is(pg_temp.ids('service', $$hosts => '{api.pgtap.test}'$$), '990208,990207,990206,990205,990203,990201',
  'the service role lists every entry');
select is(pg_temp.ids('anon', ''), 'error:42501', 'anon may not execute entries_filtered_list');
select is(pg_temp.value_as('admin', 'select count(*)::text from public.entries_filtered_list()'), '50',
  'the list returns 50 entries by default');

-- Paging and lim
select is(pg_temp.ids('a', 'before_id => 990203'), '990202,990201', 'before_id continues after the given id');
select is(pg_temp.ids('a', 'lim => 2'), '990205,990203', 'lim caps the page size');
select is(pg_temp.ids('a', 'before_id => 990203, lim => 1'), '990202', 'before_id and lim page together');
select is(pg_temp.ids('a', 'lim => 0'), 'error:22023', 'lim 0 is refused');
select is(pg_temp.ids('a', 'lim => 1001'), 'error:22023', 'lim 1001 is refused');
select is(pg_temp.ids('a', 'lim => null'), 'error:22023', 'a null lim is refused');
select is(pg_temp.ids('a', 'lim => 1000'), '990205,990203,990202,990201', 'lim 1000 is allowed');
select is(pg_temp.ids('none', 'lim => 0'), 'error:22023', 'lim is checked even for a caller who sees nothing');

-- Search
select is(pg_temp.ids('a', $$search_q => 'logo'$$), '990202', 'search matches the path, any case');
select is(pg_temp.ids('a', $$search_q => 'CDN.PGTAP'$$), '990202', 'search matches the host, any case');
select is(pg_temp.ids('a', $$search_q => 'needle'$$), '990205', 'search matches the url, any case');
select is(pg_temp.ids('a', $$search_q => '100%_'$$), '990203', 'search treats % and _ literally');
select is(pg_temp.ids('a', $$search_q => '_'$$), '990203', 'a lone _ matches only a literal underscore');
select is(pg_temp.ids('a', $$search_q => '%'$$), '990203', 'a lone % matches only a literal percent sign');
select is(pg_temp.ids('a', $$search_q => '  logo  '$$), '990202', 'search ignores surrounding blanks');
select is(pg_temp.ids('a', $$search_q => '   '$$), '990205,990203,990202,990201', 'a blank search filters nothing');
select is(pg_temp.ids('a', $$search_q => 'v1/b'$$), '', 'search never reaches another user''s entries');
select is(pg_temp.ids('a', format('search_q => %L', repeat('x', 201))), 'error:22023',
  'a search term over 200 characters is refused');

-- Filters
select is(pg_temp.ids('a', $$hosts => '{cdn.pgtap.test}'$$), '990202', 'hosts keeps only entries of those hosts');
select is(pg_temp.ids('a', $$hosts => '{CDN.pgtap.test}'$$), '', 'hosts match exactly');
select is(pg_temp.ids('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000a2}'$$), '990203',
  'device_uuids keeps only entries of those devices');
select is(pg_temp.ids('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000b1}'$$), '',
  'device_uuids naming another user''s device adds nothing');
select is(pg_temp.ids('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000a1'$$), '990203,990201',
  'target_workspace keeps only entries linked to the workspace');
select is(pg_temp.ids('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000b1'$$), '',
  'another user''s workspace yields nothing');
select is(pg_temp.ids('admin', $$target_workspace => '3b000000-0000-4000-8000-0000000000b1'$$), '990206',
  'an admin lists any workspace''s entries');
select is(pg_temp.ids('none', $$target_workspace => '3b000000-0000-4000-8000-0000000000a1'$$), '',
  'a user without entries:view lists no workspace''s entries');
select is(pg_temp.ids('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000a1', search_q => 'USERS'$$),
  '990201', 'filters combine');
select is(pg_temp.ids('a', format('device_uuids => %L', array(select gen_random_uuid() from generate_series(1, 1001)))),
  'error:22023', 'more than 1000 device uuids are refused');
select is(pg_temp.ids('a', format('hosts => %L', array(select 'h' || n from generate_series(1, 1001) as n))),
  'error:22023', 'more than 1000 hosts are refused');

-- entries_filtered_count
select is(pg_temp.total('a', ''), '4', 'a member counts the entries of their own devices');
select is(pg_temp.total('b', ''), '1', 'another member counts only their device''s entries');
select is(pg_temp.total('none', ''), '0', 'a user without entries:view counts nothing');
select is(pg_temp.total('admin', $$hosts => '{api.pgtap.test}'$$), '6',
  'an admin counts every device''s entries, unattributed ones included');
select is(pg_temp.total('a', $$search_q => '100%_'$$), '1', 'count treats % and _ literally');
select is(pg_temp.total('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000a1}'$$), '3',
  'count applies device_uuids');
select is(pg_temp.total('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000a1'$$), '2',
  'count applies target_workspace');
select is(pg_temp.total('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000b1'$$), '0',
  'count of another user''s workspace is 0');
select is(pg_temp.total('a', format('search_q => %L', repeat('x', 201))), 'error:22023',
  'count refuses a search term over 200 characters');
select is(pg_temp.total('anon', ''), 'error:42501', 'anon may not execute entries_filtered_count');
select is(pg_temp.value_as('admin', $$select (public.entries_filtered_count(hosts => '{api.pgtap.test,cdn.pgtap.test}')
  = (select count(*) from public.entries_filtered_list(hosts => '{api.pgtap.test,cdn.pgtap.test}', lim => 1000)))::text$$),
  'true', 'count equals the number of entries list returns for the same filter (admin)');
select is(pg_temp.value_as('a', $$select (public.entries_filtered_count(search_q => 'pgtap')
  = (select count(*) from public.entries_filtered_list(search_q => 'pgtap', lim => 1000)))::text$$),
  'true', 'count equals the number of entries list returns for the same filter (member)');
select is(pg_temp.value_as('admin', 'select (public.entries_filtered_count() = (select count(*) from public.entries))::text'),
  'true', 'an admin''s unfiltered count is every entry');

select * from finish();
rollback;
