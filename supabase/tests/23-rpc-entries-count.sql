-- pgTAP: entries_count (exact up to a threshold, a flagged estimate from a sample above it):
-- caller scope on both paths (the exact count and the sample read under RLS), every filter of
-- inspect_entries, exact on request, the flag and the floor of an estimate, argument checks,
-- and that the sample runs as the caller (security invoker, search_path set).
begin;
create extension if not exists pgtap with schema extensions;
select plan(41);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now() - interval '35 days', now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000a2', 'pgtap a2', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
-- Every row carries the marker "cntmark" in its host. a: 30 GET 200 on a1 (one a day back, so
-- the last 24 hours hold 1 of them) and 5 POST 503 on a2; b: 200 on b1; 3 unattributed; 4 on
-- the device of the user without entries:view.
insert into public.entries (ts, device_uuid, payload)
select now() - make_interval(days => e.n - 1) - interval '1 minute', e.device_uuid::uuid,
  jsonb_build_object('method', e.method, 'host', e.host, 'path', '/v1/' || e.n,
    'url', 'https://' || e.host || '/v1/' || e.n, 'statusCode', e.status)
from (
  select n, 'de000000-0000-4000-8000-0000000000a1' as device_uuid, 'GET' as method,
    'a.cntmark.test' as host, 200 as status from generate_series(1, 30) n
  union all
  select n, 'de000000-0000-4000-8000-0000000000a2', 'POST', 'a2.cntmark.test', 503
  from generate_series(1, 5) n
  union all
  select 1 + n % 14, 'de000000-0000-4000-8000-0000000000b1', 'GET', 'b.cntmark.test', 200
  from generate_series(1, 200) n
  union all
  select 1, null, 'GET', 'x.cntmark.test', 200 from generate_series(1, 3) n
  union all
  select 1, 'de000000-0000-4000-8000-0000000000f1', 'GET', 'n.cntmark.test', 200
  from generate_series(1, 4) n
) e;
insert into public.workspaces (id, name, owner_user_id) values
  ('3b000000-0000-4000-8000-0000000000a1', 'pgtap wa', pg_temp.uid('a')),
  ('3b000000-0000-4000-8000-0000000000b1', 'pgtap wb', pg_temp.uid('b'));
insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
select '3b000000-0000-4000-8000-0000000000a1'::uuid, e.id, e.ts from public.entries e
where e.host = 'a2.cntmark.test'
union all
select '3b000000-0000-4000-8000-0000000000b1', e.id, e.ts from public.entries e
where e.host = 'b.cntmark.test';

-- entries_count's answer to `who` for the given arguments, as text.
create function pg_temp.counted(who text, args text) returns text language sql
as $$ select pg_temp.value_as(who, format('select public.entries_count(%s)::text', args)) $$;
-- The same through entries_count's core with a given threshold and sample size.
create function pg_temp.flagged(who text, args text, threshold bigint, sample_pages bigint)
returns text language sql
as $$ select pg_temp.value_as(who, format(
  'select private.entries_count_flagged(%s, exact => false, threshold => %s, sample_pages => %s)::text',
  concat_ws(', ', nullif(args, ''), 'target_workspace => null'), threshold, sample_pages)) $$;
create function pg_temp.all_filters(args text) returns text language sql
as $$ select concat_ws(', ', nullif(args, ''),
  'device_uuids => null', 'hosts => null', 'methods => null', 'status_classes => null',
  'from_ts => null', 'to_ts => null') $$;

-- Exact answers: the scope of each caller
select is(pg_temp.counted('a', $$search_q => 'cntmark'$$), '{"count": 35, "exact": true}',
  'a member counts the entries of their own devices, exactly, flagged exact');
select is(pg_temp.counted('b', $$search_q => 'cntmark'$$), '{"count": 200, "exact": true}',
  'another member counts only their device''s entries');
select is(pg_temp.counted('admin', $$search_q => 'cntmark'$$), '{"count": 242, "exact": true}',
  'an admin counts every device''s entries, unattributed ones included');
select is(pg_temp.counted('service', $$search_q => 'cntmark'$$), '{"count": 242, "exact": true}',
  'the service role counts every entry');
select is(pg_temp.counted('none', $$search_q => 'cntmark'$$), '{"count": 0, "exact": true}',
  'a user without entries:view counts 0, without an error');
select is(pg_temp.counted('viewer', $$search_q => 'cntmark'$$), '{"count": 0, "exact": true}',
  'a viewer without devices counts 0');
select is(pg_temp.counted('anon', ''), 'error:42501', 'anon may not execute entries_count');
select is(pg_temp.value_as('admin', $$select (public.entries_count() = jsonb_build_object(
    'count', (select count(*) from public.entries), 'exact', true))::text$$), 'true',
  'over 1000 entries on fewer pages than the sample reads: every page read, the count exact');

-- Filters, as inspect_entries and entries_filtered_list take them
select is(pg_temp.counted('a', $$hosts => '{a2.cntmark.test}'$$), '{"count": 5, "exact": true}',
  'hosts');
select is(pg_temp.counted('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000a1}'$$),
  '{"count": 30, "exact": true}', 'device_uuids');
select is(pg_temp.counted('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000b1}'$$),
  '{"count": 0, "exact": true}', 'device_uuids naming another user''s device adds nothing');
select is(pg_temp.counted('a', $$search_q => 'cntmark', status_classes => '{5}'$$),
  '{"count": 5, "exact": true}', 'status_classes');
select is(pg_temp.counted('a', $$search_q => 'cntmark', methods => '{post}'$$),
  '{"count": 5, "exact": true}', 'methods, any case');
select is(pg_temp.counted('a', $$search_q => 'cntmark', from_ts => now() - interval '1 day'$$),
  '{"count": 2, "exact": true}', 'from_ts');
select is(pg_temp.counted('a', $$search_q => 'cntmark', from_ts => now() - interval '10 days',
    to_ts => now() - interval '5 days'$$),
  '{"count": 5, "exact": true}', 'from_ts and to_ts');
select is(pg_temp.counted('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000a1'$$),
  '{"count": 5, "exact": true}', 'target_workspace');
select is(pg_temp.counted('a', $$target_workspace => '3b000000-0000-4000-8000-0000000000b1'$$),
  '{"count": 0, "exact": true}', 'another user''s workspace counts 0');
select is(pg_temp.counted('b', $$search_q => 'CNTMARK', exact => true$$),
  '{"count": 200, "exact": true}', 'exact => true counts every row');
select is(pg_temp.value_as('a', $$select (public.entries_count(search_q => 'cntmark', hosts => '{a.cntmark.test}')
    ->> 'count')::bigint = public.entries_filtered_count(search_q => 'cntmark', hosts => '{a.cntmark.test}')$$),
  'true', 'the same count as entries_filtered_count for the same filter');

-- Argument checks (entries_filter_clause's)
select is(pg_temp.counted('a', format('search_q => %L', repeat('x', 201))), 'error:22023',
  'a search term over 200 characters is refused');
select is(pg_temp.counted('a', $$status_classes => '{7}'$$), 'error:22023',
  'a status class outside 0..5 is refused');
select is(pg_temp.counted('a', $$from_ts => now(), to_ts => now() - interval '1 day'$$),
  'error:22023', 'from_ts after to_ts is refused');
select is(pg_temp.counted('none', $$status_classes => '{7}'$$), 'error:22023',
  'arguments are checked even for a caller who sees nothing');

-- Above the threshold: the sample. With every page sampled the answer is exact and shows which
-- rows the sample read: the caller's only.
select is(pg_temp.flagged('a', pg_temp.all_filters($$search_q => 'cntmark'$$), 10, 1000000000),
  '{"count": 35, "exact": true}', 'a member''s sample reads only their rows (RLS)');
select is(pg_temp.flagged('b', pg_temp.all_filters($$search_q => 'cntmark'$$), 10, 1000000000),
  '{"count": 200, "exact": true}', 'another member''s sample reads only theirs');
select is(pg_temp.flagged('admin', pg_temp.all_filters($$search_q => 'cntmark'$$), 10, 1000000000),
  '{"count": 242, "exact": true}', 'an admin''s sample reads every row');
select is(pg_temp.flagged('a', 'search_q => ''cntmark'', device_uuids => null, hosts => null, '
    'methods => null, status_classes => ''{2}'', from_ts => null, to_ts => null', 10, 1000000000),
  '{"count": 30, "exact": true}', 'the sample applies the filters (status class)');
select is(pg_temp.flagged('a', 'search_q => null, device_uuids => null, hosts => null, methods => null, '
    'status_classes => null, from_ts => now() - interval ''1 day'', to_ts => null', 1, 1000000000),
  '{"count": 2, "exact": true}', 'the sample applies the window');
-- With one page, the answer is an estimate: flagged, and never below threshold + 1.
select is(pg_temp.value_as('a', format(
    'select (r ->> ''exact'') || '','' || ((r ->> ''count'')::bigint >= 11)::text from '
    'private.entries_count_flagged(target_workspace => null, device_uuids => null, hosts => null, '
    'search_q => ''cntmark'', methods => null, status_classes => null, from_ts => null, '
    'to_ts => null, exact => false, threshold => 10, sample_pages => 1) r')),
  'false,true', 'an estimate is flagged exact: false and counts at least threshold + 1');
select is(pg_temp.value_as('b', format(
    'select (r ->> ''count'') from private.entries_count_flagged(target_workspace => null, '
    'device_uuids => null, hosts => null, search_q => ''a.cntmark'', methods => null, '
    'status_classes => null, from_ts => null, to_ts => null, exact => false, threshold => 0, '
    'sample_pages => 1) r')),
  '0', 'another user''s matches give no estimate: the exact count of what the caller sees is 0');
select is(pg_temp.flagged('a', pg_temp.all_filters($$search_q => 'cntmark'$$), 10, 0), 'error:22023',
  'a sample of no pages is refused');
select is(pg_temp.flagged('a', pg_temp.all_filters($$search_q => 'cntmark'$$), -1, 10), 'error:22023',
  'a negative threshold is refused');
select is(pg_temp.value_as('a', $$select (private.entries_count_flagged(null, null, null, 'cntmark',
    null, null, null, null, true, 10, 1) ->> 'count')$$),
  '35', 'exact => true skips the sample whatever the threshold');

-- The capped exact count (security definer) keeps the caller's scope
select is(pg_temp.value_as('a', $$select private.entries_count_capped(null, null, null, 'cntmark',
    null, null, null, null, null)::text$$), '35', 'the capped count keeps a member''s scope');
select is(pg_temp.value_as('a', $$select private.entries_count_capped(null, null, null, 'cntmark',
    null, null, null, null, 7)::text$$), '7', 'the capped count stops at its cap');
select is(pg_temp.value_as('anon', $$select private.entries_count_capped(null, null, null, null,
    null, null, null, null, 1)::text$$), 'error:42501', 'anon may not execute the capped count');
select is(pg_temp.value_as('anon', $$select private.entries_count_flagged(null, null, null, null,
    null, null, null, null, false, 1, 1)::text$$), 'error:42501', 'anon may not execute the core');

-- How the functions run
select is((select prosecdef from pg_proc where oid = 'public.entries_count'::regproc), false,
  'entries_count runs as the caller');
select is((select prosecdef from pg_proc where oid = 'private.entries_count_flagged'::regproc), false,
  'its core, which reads the sample, runs as the caller');
select is((select prosecdef from pg_proc where oid = 'private.entries_count_capped'::regproc), true,
  'the capped exact count is security definer (trigram indexes under ILIKE)');
select is((select count(*) from pg_proc
    where oid in ('public.entries_count'::regproc, 'private.entries_count_flagged'::regproc,
                  'private.entries_count_capped'::regproc)
      and proconfig @> array['search_path=""']), 3::bigint,
  'every count function sets search_path');

select * from finish();
rollback;
