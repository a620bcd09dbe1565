-- entries_filtered_list and entries_filtered_count (001 §4.2): newest-first keyset listing and its
-- count, with trigram search across host, path and url. Security definer so the trigram and
-- keyset indexes apply: under RLS, ILIKE (not leakproof) may not run before the policy, which
-- rules out the GIN indexes. The functions apply the same scope the entries policies do.

-- Builds the WHERE clauses shared by list and count: `scope` (caller, workspace, devices, hosts)
-- and `match` (the search term, or null without one). Returns no row when the caller may see no
-- entry (no entries:view, or a workspace outside their scope). Literals go through format(%L).
create function private.entries_filter_clause(
  target_workspace uuid,
  device_uuids uuid[],
  hosts text[],
  search_q text,
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
  if term is not null then
    -- The term is a literal substring: escape LIKE's wildcards and its escape character.
    pattern := '%' || replace(replace(replace(term, '\', '\\'), '%', '\%'), '_', '\_') || '%';
    match := format('(e.host ilike %1$L or e.path ilike %1$L or e.url ilike %1$L)', pattern);
  end if;
  scope := array_to_string(clauses, ' and ');
  return next;
end
$$;
comment on function private.entries_filter_clause(uuid, uuid[], text[], text) is
  'WHERE clauses (scope, match) of entries_filtered_list/count for the caller; no row when they '
  'may see nothing.';
grant execute on function private.entries_filter_clause(uuid, uuid[], text[], text)
  to authenticated, service_role;

-- Security definer: see the header (index use); the scope comes from entries_filter_clause.
-- A search runs in two steps because no single plan suits every term: a common term fills a
-- page from the newest few thousand rows (walk the id index), a rare one would walk the whole
-- index that way and is found through the trigram indexes instead.
create function public.entries_filtered_list(
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
  probe_rows constant integer := 4000;
  filter record;
  scope text;
  window_hits integer;
  window_floor bigint;
begin
  if lim is null or lim < 1 or lim > 1000 then
    raise exception 'lim must be between 1 and 1000' using errcode = '22023';
  end if;
  select * into filter
  from private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q);
  if not found then
    return;
  end if;
  scope := filter.scope;
  if before_id is not null then
    scope := scope || format(' and e.id < %s', before_id);
  end if;
  if filter.match is null then
    return query execute format(
      'select e.* from public.entries e where %s order by e.id desc limit %s', scope, lim);
    return;
  end if;

  -- Step 1: does the newest window hold a full page of matches?
  execute format(
    'select count(*) filter (where %s), min(e.id) from ('
    '  select e.id, e.host, e.path, e.url from public.entries e where %s'
    '  order by e.id desc limit %s) e',
    filter.match, scope, probe_rows)
  into window_hits, window_floor;
  if window_hits >= lim then
    return query execute format(
      'select e.* from public.entries e where %s and e.id >= %s and %s order by e.id desc limit %s',
      scope, window_floor, filter.match, lim);
    return;
  end if;

  -- Step 2: sparse matches; collect them through the trigram indexes, then fetch one page.
  return query execute format(
    'with matches as materialized (select e.id, e.ts from public.entries e where %s and %s) '
    'select e.* from public.entries e '
    'join (select id, ts from matches order by id desc limit %s) m on m.id = e.id and m.ts = e.ts '
    'order by e.id desc',
    scope, filter.match, lim);
end
$$;
comment on function public.entries_filtered_list(uuid, uuid[], text[], text, bigint, integer) is
  'Entries the caller may see, newest first (id desc). Filters: target_workspace (entries linked '
  'to it), device_uuids, hosts (exact), search_q (substring of host, path or url, any case). '
  'Page with before_id = the last id of the previous page; lim 1..1000 (default 50). Project '
  'with select=id,ts,host,url. Without entries:view the result is [].';
revoke execute on function public.entries_filtered_list(uuid, uuid[], text[], text, bigint, integer)
  from public, anon;
grant execute on function public.entries_filtered_list(uuid, uuid[], text[], text, bigint, integer)
  to authenticated, service_role;

-- Security definer: as entries_filtered_list.
create function public.entries_filtered_count(
  target_workspace uuid default null,
  device_uuids uuid[] default null,
  hosts text[] default null,
  search_q text default null)
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
  from private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q);
  if not found then
    return 0;
  end if;
  execute format('select count(*) from public.entries e where %s and %s',
    filter.scope, coalesce(filter.match, 'true'))
  into total;
  return total;
end
$$;
comment on function public.entries_filtered_count(uuid, uuid[], text[], text) is
  'How many entries entries_filtered_list would return over all pages for the same filter.';
revoke execute on function public.entries_filtered_count(uuid, uuid[], text[], text)
  from public, anon;
grant execute on function public.entries_filtered_count(uuid, uuid[], text[], text)
  to authenticated, service_role;
