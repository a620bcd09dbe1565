-- inspect_entries (001 §4.1 tool inspect_requests): the captures a caller may see, narrow rows
-- newest first, filtered by device, host, search, method, status class and time window. It is
-- entries_filtered_list's design, not a second one: the same WHERE builder (now also taking
-- methods, status classes and a window) and the same search (the newest rows first, then the
-- indexes), moved into one private function both list RPCs call.

-- Replaces the four-argument form: the new arguments default to null, so existing callers
-- (entries_filtered_count) resolve to this one unchanged.
drop function private.entries_filter_clause(uuid, uuid[], text[], text);

-- Builds the WHERE clauses shared by the entry RPCs: `scope` (caller, workspace, devices, hosts,
-- time window; the part an index walk in id order serves) and `match` (search term, methods,
-- status classes: checked row by row, or null without any). Returns no row when the caller may
-- see no entry (no entries:view, or a workspace outside their scope). Literals go through
-- format(%L). Security definer like the form it replaces: it reads the caller's own scope
-- (devices, workspaces, roles) for the definer RPCs that call it.
create function private.entries_filter_clause(
  target_workspace uuid default null,
  device_uuids uuid[] default null,
  hosts text[] default null,
  search_q text default null,
  methods text[] default null,
  status_classes integer[] default null,
  from_ts timestamptz default null,
  to_ts timestamptz default null,
  out scope text,
  out match text)
returns setof record
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  is_admin boolean := private.is_admin();
  term text := nullif(btrim(search_q), '');
  clauses text[] := array['true'];
  matches text[] := '{}';
  pattern text;
begin
  if cardinality(device_uuids) > 1000 then
    raise exception 'device_uuids may hold at most 1000 uuids' using errcode = '22023';
  end if;
  if cardinality(hosts) > 1000 then
    raise exception 'hosts may hold at most 1000 host names' using errcode = '22023';
  end if;
  if char_length(term) > 200 then
    raise exception 'search_q may be at most 200 characters' using errcode = '22023';
  end if;
  if cardinality(methods) > 20
     or exists (select 1 from unnest(methods) m where char_length(m) between 1 and 32 is not true)
  then
    raise exception 'methods may hold at most 20 method names of 1 to 32 characters'
      using errcode = '22023';
  end if;
  if exists (select 1 from unnest(status_classes) c where c between 0 and 5 is not true) then
    raise exception 'status_classes may hold only 1 to 5 (1xx..5xx) and 0 (no status)'
      using errcode = '22023';
  end if;
  if from_ts > to_ts then
    raise exception 'from_ts must not be after to_ts' using errcode = '22023';
  end if;
  if not public.has_capability('entries', 'view') then
    return;
  end if;

  if not is_admin then
    clauses := clauses || format('e.device_uuid = any (%L::uuid[])', private.owned_device_uuids());
  end if;
  if target_workspace is not null then
    if not is_admin and not (target_workspace = any (private.owned_workspace_ids())) then
      return;
    end if;
    clauses := clauses || format(
      'exists (select 1 from public.workspace_entries we where we.workspace_id = %L '
      'and we.entry_id = e.id and we.entry_ts = e.ts)', target_workspace);
  end if;
  -- One value is written as `=`: an ordered index scan then yields newest-first without a sort.
  if cardinality(device_uuids) = 1 then
    clauses := clauses || format('e.device_uuid = %L::uuid', device_uuids[1]);
  elsif device_uuids is not null then
    clauses := clauses || format('e.device_uuid = any (%L::uuid[])', device_uuids);
  end if;
  if cardinality(hosts) = 1 then
    clauses := clauses || format('e.host = %L', hosts[1]);
  elsif hosts is not null then
    clauses := clauses || format('e.host = any (%L::text[])', hosts);
  end if;
  -- 001 §4.2 rule 3: literal bounds, so the planner skips the weeks outside the window.
  if from_ts is not null then
    clauses := clauses || format('e.ts >= %L::timestamptz', from_ts);
  end if;
  if to_ts is not null then
    clauses := clauses || format('e.ts < %L::timestamptz', to_ts);
  end if;

  if term is not null then
    -- The term is a literal substring: escape LIKE's wildcards and its escape character.
    pattern := '%' || replace(replace(replace(term, '\', '\\'), '%', '\%'), '_', '\_') || '%';
    matches := matches
      || format('(e.host ilike %1$L or e.path ilike %1$L or e.url ilike %1$L)', pattern);
  end if;
  -- Methods are matched upper-cased (the proxy records them as sent; clients send them so).
  if methods is not null then
    matches := matches || format('e.method = any (%L::text[])',
      array(select upper(m) from unnest(methods) m));
  end if;
  if status_classes is not null then
    matches := matches || coalesce('(' || (
      select string_agg(case when c = 0 then 'e.status_code is null'
        else format('e.status_code between %s and %s', c * 100, c * 100 + 99) end, ' or ')
      from (select distinct c from unnest(status_classes) c) classes) || ')', 'false');
  end if;
  scope := array_to_string(clauses, ' and ');
  match := nullif(array_to_string(matches, ' and '), '');
  return next;
end
$$;
comment on function private.entries_filter_clause(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz) is
  'WHERE clauses (scope, match) of the entry RPCs for the caller; no row when they may see '
  'nothing. Validates the filters (22023).';
grant execute on function private.entries_filter_clause(
  uuid, uuid[], text[], text, text[], integer[], timestamptz, timestamptz)
  to authenticated, service_role;

-- The SQL of one page, newest first: `columns` of the rows in `scope` that satisfy `match`,
-- below before_id, at most lim. With a match no single plan suits every filter: a common one
-- fills a page from the newest few thousand rows (walk the id index), a rare one would walk the
-- whole index that way and is collected through the trigram, method and status indexes instead.
-- Step 1 counts the matches among the newest 4000 rows in scope. A full page there, or a scope
-- smaller than that: the page comes from the window. Some matches but not a page: the window
-- is widened once or twice to where the density seen predicts a page, up to 20000 rows (a filter
-- matching 3 % of rows with lim 200 took 135 ms through the indexes, 8 ms this way). No match,
-- or still short: step 2 collects every match through the indexes (measured, docs/data-model.md).
-- Security invoker and granted to no API role: it executes the fragments it is given, so only
-- the security-definer RPCs (which build them with entries_filter_clause) call it.
create function private.entries_page_sql(
  scope text,
  match text,
  before_id bigint,
  lim integer,
  columns text)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  max_probe_rows constant integer := 20000;
  probe_rows integer := 4000;
  window_rows integer;
  window_hits integer;
  window_floor bigint;
begin
  if before_id is not null then
    scope := scope || format(' and e.id < %s', before_id);
  end if;
  if match is null then
    return format('select %s from public.entries e where %s order by e.id desc limit %s',
      columns, scope, lim);
  end if;

  loop
    execute format(
      'select count(*), count(*) filter (where %s), min(e.id) from ('
      '  select e.id, e.host, e.path, e.url, e.method, e.status_code from public.entries e'
      '  where %s order by e.id desc limit %s) e',
      match, scope, probe_rows)
    into window_rows, window_hits, window_floor;
    if window_hits >= lim or window_rows < probe_rows then
      return format(
        'select %s from public.entries e where %s and e.id >= %L and %s '
        'order by e.id desc limit %s',
        columns, scope, window_floor, match, lim);
    end if;
    -- Widen only where the density seen predicts a page; a wider probe that falls short is
    -- wasted work on top of step 2.
    exit when window_hits = 0 or probe_rows >= max_probe_rows
      or probe_rows::numeric * lim / window_hits > max_probe_rows;
    probe_rows := least(max_probe_rows, ceil(probe_rows * lim * 1.5 / window_hits)::integer);
  end loop;

  -- Step 2: sparse matches; collect them through the indexes, then fetch one page.
  return format(
    'with matches as materialized (select e.id, e.ts from public.entries e where %s and %s) '
    'select %s from public.entries e '
    'join (select id, ts from matches order by id desc limit %s) m on m.id = e.id and m.ts = e.ts '
    'order by e.id desc',
    scope, match, columns, lim);
end
$$;
comment on function private.entries_page_sql(text, text, bigint, integer, text) is
  'SQL of one newest-first page of entries for WHERE fragments from entries_filter_clause; runs '
  'the first step of a search itself. Not for API roles: it executes what it is given.';
revoke execute on function private.entries_page_sql(text, text, bigint, integer, text)
  from public, anon, authenticated;

-- entries_filtered_list as before, its page now built by entries_page_sql.
-- Security definer: see 20261121101000 (index use under ILIKE); scope from entries_filter_clause.
create or replace function public.entries_filtered_list(
  target_workspace uuid default null,
  device_uuids uuid[] default null,
  hosts text[] default null,
  search_q text default null,
  before_id bigint default null,
  lim integer default 50)
returns setof public.entries
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  filter record;
begin
  if lim is null or lim < 1 or lim > 1000 then
    raise exception 'lim must be between 1 and 1000' using errcode = '22023';
  end if;
  select * into filter
  from private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q);
  if not found then
    return;
  end if;
  return query execute private.entries_page_sql(filter.scope, filter.match, before_id, lim, 'e.*');
end
$$;

-- Security definer: as entries_filtered_list (trigram search needs the indexes, which RLS rules
-- out under ILIKE); the scope is the entries policies' own, applied by entries_filter_clause.
create function public.inspect_entries(
  device_uuids uuid[] default null,
  hosts text[] default null,
  search_q text default null,
  methods text[] default null,
  status_classes integer[] default null,
  from_ts timestamptz default null,
  to_ts timestamptz default null,
  before_id bigint default null,
  lim integer default 50)
returns table (
  id bigint,
  ts timestamptz,
  kind text,
  device_uuid uuid,
  method text,
  host text,
  url text,
  status_code smallint,
  duration_ms double precision,
  request_bytes bigint,
  response_bytes bigint)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  filter record;
begin
  if lim is null or lim < 1 or lim > 200 then
    raise exception 'lim must be between 1 and 200' using errcode = '22023';
  end if;
  select * into filter
  from private.entries_filter_clause(
    device_uuids => device_uuids, hosts => hosts, search_q => search_q, methods => methods,
    status_classes => status_classes, from_ts => from_ts, to_ts => to_ts);
  if not found then
    return;
  end if;
  return query execute private.entries_page_sql(filter.scope, filter.match, before_id, lim,
    'e.id, e.ts, e.kind, e.device_uuid, e.method, e.host, e.url, e.status_code, e.duration_ms, '
    'e.request_bytes, e.response_bytes');
end
$$;
comment on function public.inspect_entries(
  uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint, integer) is
  'Captures the caller may see, newest first (id desc), as narrow rows (no payload: fetch one by '
  'id). Filters: device_uuids, hosts (exact), search_q (substring of host, path or url, any '
  'case), methods (upper-cased), status_classes (1..5 for 1xx..5xx, 0 for no status), '
  'from_ts <= ts < to_ts. Page with before_id = the last id of the previous page; lim 1..200 '
  '(default 50). Without entries:view the result is [].';
revoke execute on function public.inspect_entries(
  uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint, integer)
  from public, anon;
grant execute on function public.inspect_entries(
  uuid[], text[], text, text[], integer[], timestamptz, timestamptz, bigint, integer)
  to authenticated, service_role;
