-- pgTAP: a search that fills no page among the newest rows (step 2 of private.entries_page_sql)
-- reads weeks newest first and stops at the week that completes a page; the page is the one every
-- match, sorted by id, would give: also when an older week holds a match with a newer id (an
-- import), when there is less than a page, on the next keyset page, and through inspect_entries.
begin;
create extension if not exists pgtap with schema extensions;
select plan(9);

\ir helpers/actors.psql

create function pg_temp.this_week() returns timestamptz language sql stable
as $$ select date_trunc('week', now() at time zone 'UTC') at time zone 'UTC' $$;
do $$ begin
  -- Thirteen weeks: windows of up to half of them are worth reading on their own.
  perform private.create_entries_partitions(pg_temp.this_week() - interval '12 weeks', now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000024a1', 'pgtap sparse a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000024b1', 'pgtap sparse b1', pg_temp.uid('b'));

-- Week -2: 30 matches; week -1: 40; this week: 20, then 6000 newer captures without the term, so
-- the newest rows hold no match and the search takes step 2. Ids rise with time, as captured.
create function pg_temp.add(first_id bigint, n integer, week integer, path text)
returns void language sql as $$
  insert into public.entries (id, ts, device_uuid, payload)
  select first_id + k, pg_temp.this_week() + make_interval(weeks => week) + make_interval(secs => k),
    'de000000-0000-4000-8000-0000000024a1',
    jsonb_build_object('host', 'sparse.pgtap.test', 'path', path || k,
                       'url', 'https://sparse.pgtap.test' || path || k)
  from generate_series(1, n) as k
$$;
select pg_temp.add(5100000, 30, -2, '/zebra/');
select pg_temp.add(5200000, 40, -1, '/zebra/');
select pg_temp.add(5290000, 20, 0, '/zebra/');
select pg_temp.add(5300000, 6000, 0, '/plain/');
select pg_temp.add(5500000, 1, -3, '/okapi/');
select pg_temp.add(5600000, 1, -1, '/okapi/');
insert into public.entries (id, device_uuid, payload) values
  (5700001, 'de000000-0000-4000-8000-0000000024b1', '{"host": "b.pgtap.test", "path": "/zebra/b"}');
analyze public.entries;

-- entries_filtered_list's ids for `who`, in order; and every match sorted by id, the truth.
create function pg_temp.ids(who text, args text) returns text language sql
as $$ select pg_temp.value_as(who, format(
  $q$select coalesce(string_agg(l.id::text, ',' order by l.ordinality), '')
     from public.entries_filtered_list(%s) with ordinality as l$q$, args)) $$;
create function pg_temp.truth(term text, below bigint, lim integer) returns text language sql
as $$ select coalesce(string_agg(id::text, ',' order by id desc), '') from (
  select id from public.entries
  where device_uuid = 'de000000-0000-4000-8000-0000000024a1'
    and (host ilike '%' || term || '%' or path ilike '%' || term || '%' or url ilike '%' || term || '%')
    and (below is null or id < below)
  order by id desc limit lim) t $$;

select is(private.entries_page_sql('e.device_uuid = ''de000000-0000-4000-8000-0000000024a1''',
    '(e.host ilike ''%zebra%'' or e.path ilike ''%zebra%'' or e.url ilike ''%zebra%'')', null, 50, 'e.id')
  like '%e.ts >=%', true, 'a sparse search reads only the newest weeks that complete a page');
select is(pg_temp.ids('a', $$search_q => 'zebra'$$), pg_temp.truth('zebra', null, 50),
  'the page is the newest 50 matches, across the weeks read');
select is(pg_temp.ids('a', $$search_q => 'zebra', before_id => 5200021$$),
  pg_temp.truth('zebra', 5200021, 50), 'the next keyset page reaches the older weeks');
select is(pg_temp.ids('a', $$search_q => 'okapi'$$), '5600001,5500001',
  'fewer matches than a page: every one, newest first');
select is(pg_temp.ids('b', $$search_q => 'zebra'$$), '5700001',
  'another member sees only their own match');

-- An import: a capture stamped four weeks back (before any window that holds a page) with the
-- newest id.
insert into public.entries (id, ts, device_uuid, payload) values
  (5800001, pg_temp.this_week() - interval '4 weeks' + interval '1 hour',
   'de000000-0000-4000-8000-0000000024a1', '{"host": "sparse.pgtap.test", "path": "/imported/zebra"}');
select is(split_part(pg_temp.ids('a', $$search_q => 'zebra'$$), ',', 1), '5800001',
  'an older week''s match with a newer id still leads the page');
select is(pg_temp.ids('a', $$search_q => 'zebra'$$), pg_temp.truth('zebra', null, 50),
  'with such a match the page is still exactly the newest 50');
select is(private.entries_page_sql('e.device_uuid = ''de000000-0000-4000-8000-0000000024a1''',
    '(e.host ilike ''%zebra%'' or e.path ilike ''%zebra%'' or e.url ilike ''%zebra%'')', null, 50, 'e.id')
  like '%e.ts >=%', false, 'then the page is collected from every week');
select is(pg_temp.value_as('a', $$select string_agg(id::text, ',' order by ordinality)
    from public.inspect_entries(search_q => 'zebra', lim => 50) with ordinality$$),
  pg_temp.truth('zebra', null, 50), 'inspect_entries gives the same page');

select * from finish();
rollback;
