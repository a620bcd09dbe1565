-- entries_count (issue 20, "Round-1 figures that fell short"): the count the dashboard shows for
-- any entry filter, aiming at 50 ms p95 at 1M captures (measured in docs/data-model.md). Exact up
-- to a threshold, an estimate flagged as such above it, the way PostgREST's
-- `Prefer: count=estimated` answers (exact up to db-max-rows, an estimate beyond);
-- `exact => true` still counts every row (as entries_filtered_count does).
-- Counting a common term exactly costs one heap visit per match (67k matches of 1M: 274 ms p95,
-- docs/data-model.md), so a large answer is estimated from a sample instead.

-- How many of the caller's entries match, counting at most `cap` of them (null: all). Security
-- definer for the reason the search RPCs are (ILIKE under RLS rules out the trigram indexes); the
-- scope is the entries policies' own, applied by entries_filter_clause. With a cap the scan stops
-- at the cap-th match, so a common filter costs a few thousand rows and a rare one its matches.
create function private.entries_count_capped(
  target_workspace uuid,
  device_uuids uuid[],
  hosts text[],
  search_q text,
  methods text[],
  status_classes integer[],
  from_ts timestamptz,
  to_ts timestamptz,
  cap bigint)
returns bigint
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  filter record;
  total bigint;
begin
  select * into filter
  from private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q, methods,
    status_classes, from_ts, to_ts);
  if not found then
    return 0;
  end if;
  execute format('select count(*) from (select from public.entries e where %s and %s%s) capped',
    filter.scope, coalesce(filter.match, 'true'), coalesce(' limit ' || cap, ''))
  into total;
  return total;
end
$$;
comment on function private.entries_count_capped(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint) is
  'Entries the caller may see that match the filters, counted up to cap (null: all).';
revoke execute on function private.entries_count_capped(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint)
  from public, anon;
grant execute on function private.entries_count_capped(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint)
  to authenticated, service_role;

-- The count itself, with its threshold and sample size as arguments (entries_count passes the
-- documented ones; tests pass small ones). Exact when at most `threshold` entries match, or when
-- `exact`; otherwise a sample of about `sample_pages` pages of the weeks the filter can touch,
-- counted and scaled up, flagged exact: false and never below threshold + 1 (that many matched).
-- Security invoker on purpose: the sample reads public.entries as the caller, so the entries
-- policies scope it (an admin's estimate is over every row, a member's over their devices' rows
-- only). Neither the planner's row estimate nor column statistics are used: they describe every
-- user's rows, and under RLS Postgres withholds them from ILIKE anyway (its selectivity then
-- falls back to a fixed guess). Volatile: two estimates of the same filter read different pages.
create function private.entries_count_flagged(
  target_workspace uuid,
  device_uuids uuid[],
  hosts text[],
  search_q text,
  methods text[],
  status_classes integer[],
  from_ts timestamptz,
  to_ts timestamptz,
  exact boolean,
  threshold bigint,
  sample_pages bigint)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  capped bigint;
  filter record;
  pages numeric;
  sample_percent numeric;
  sampled bigint;
begin
  if threshold is null or threshold < 0 or sample_pages is null or sample_pages < 1 then
    raise exception 'threshold must be at least 0 and sample_pages at least 1'
      using errcode = '22023';
  end if;
  capped := private.entries_count_capped(target_workspace, device_uuids, hosts, search_q, methods,
    status_classes, from_ts, to_ts, case when exact is not true then threshold + 1 end);
  if exact is true or capped <= threshold then
    return jsonb_build_object('count', capped, 'exact', true);
  end if;

  select * into filter
  from private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q, methods,
    status_classes, from_ts, to_ts);
  -- The pages of the weeks the window can touch (a partition's name carries its Monday, as
  -- private.drop_expired_entries_partitions reads it). Their current size, not relpages, which
  -- lags behind a growing week until autovacuum. Only the sample's cost and spread depend on it:
  -- every partition is sampled at the same rate, so the scaled count stays unbiased.
  select coalesce(sum(pg_catalog.pg_relation_size(c.oid)), 0)
    / pg_catalog.current_setting('block_size')::numeric
  into pages
  from pg_catalog.pg_inherits i
  join pg_catalog.pg_class c on c.oid = i.inhrelid
  where i.inhparent = 'public.entries'::regclass
    and (c.relname !~ '^entries_w[0-9]{8}$'
      or ((from_ts is null
          or to_date(substr(c.relname, 10), 'YYYYMMDD') + 7 > (from_ts at time zone 'UTC')::date)
        and (to_ts is null
          or to_date(substr(c.relname, 10), 'YYYYMMDD') <= (to_ts at time zone 'UTC')::date)));
  sample_percent := least(100, round(100 * sample_pages / greatest(pages, 1), 4));
  -- SYSTEM picks whole pages at random, each partition on its own. No REPEATABLE seed: it picks
  -- the same page numbers in every partition, 26 correlated draws instead of ~1000 (the total
  -- of 1M captures came out 20 % low in a trial).
  execute format(
    'select count(*) from public.entries e tablesample system (%s) where %s and %s',
    sample_percent, filter.scope, coalesce(filter.match, 'true'))
  into sampled;
  if sample_percent >= 100 then
    -- The sample was every page: an exact count, read under RLS.
    return jsonb_build_object('count', sampled, 'exact', true);
  end if;
  return jsonb_build_object(
    'count', greatest(threshold + 1, round(sampled * 100 / sample_percent)), 'exact', false);
end
$$;
comment on function private.entries_count_flagged(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean, bigint,
  bigint) is
  'entries_count with its threshold and sample size as arguments.';
revoke execute on function private.entries_count_flagged(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean, bigint,
  bigint)
  from public, anon;
grant execute on function private.entries_count_flagged(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean, bigint,
  bigint)
  to authenticated, service_role;

-- Security invoker, as the function it calls (its sample must run under the caller's RLS).
create function public.entries_count(
  target_workspace uuid default null,
  device_uuids uuid[] default null,
  hosts text[] default null,
  search_q text default null,
  methods text[] default null,
  status_classes integer[] default null,
  from_ts timestamptz default null,
  to_ts timestamptz default null,
  exact boolean default false)
returns jsonb
language sql
volatile
set search_path = ''
as $$
  -- Threshold 1000: Supabase's default db-max-rows, PostgREST's threshold for count=estimated.
  -- Sample 1000 pages: about 1 % of 1M captures (measured, docs/data-model.md).
  select private.entries_count_flagged(target_workspace, device_uuids, hosts, search_q, methods,
    status_classes, from_ts, to_ts, exact, 1000, 1000)
$$;
comment on function public.entries_count(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean) is
  'How many entries the caller may see match the filters (those of entries_filtered_list and '
  'inspect_entries), as {"count": n, "exact": true|false}. Exact up to 1000; above that an '
  'estimate from a random sample of the caller''s rows (exact: false, count at least 1001). '
  'exact => true counts every row.';
revoke execute on function public.entries_count(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean)
  from public, anon;
grant execute on function public.entries_count(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz, boolean)
  to authenticated, service_role;
