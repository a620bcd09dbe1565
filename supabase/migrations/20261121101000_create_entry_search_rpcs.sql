-- entries_filtered_list and entries_filtered_count (001 §4.2): newest-first keyset listing and its
-- count, with trigram search across host, path and url. Security definer so the trigram and
-- keyset indexes apply: under RLS, ILIKE (not leakproof) may not run before the policy, which
-- rules out the GIN indexes. The functions apply the same scope the entries policies do.

-- Builds the WHERE clause shared by list and count, or returns null when the caller may see no
-- entry (no entries:view, or a workspace outside their scope). Literals go through format(%L).
create function private.entries_filter_clause(
  target_workspace uuid,
  device_uuids uuid[],
  hosts text[],
  search_q text)
returns text
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
    return null;
  end if;

  if not is_admin then
    clauses := clauses || format('e.device_uuid = any (%L::uuid[])', private.owned_device_uuids());
  end if;
  if target_workspace is not null then
    if not is_admin and not (target_workspace = any (private.owned_workspace_ids())) then
      return null;
    end if;
    clauses := clauses || format(
      'exists (select 1 from public.workspace_entries we where we.workspace_id = %L '
      'and we.entry_id = e.id and we.entry_ts = e.ts)', target_workspace);
  end if;
  if device_uuids is not null then
    clauses := clauses || format('e.device_uuid = any (%L::uuid[])', device_uuids);
  end if;
  if hosts is not null then
    clauses := clauses || format('e.host = any (%L::text[])', hosts);
  end if;
  if term is not null then
    -- The term is a literal substring: escape LIKE's wildcards and its escape character.
    pattern := '%' || replace(replace(replace(term, '\', '\\'), '%', '\%'), '_', '\_') || '%';
    clauses := clauses || format(
      '(e.host ilike %1$L or e.path ilike %1$L or e.url ilike %1$L)', pattern);
  end if;
  return array_to_string(clauses, ' and ');
end
$$;
comment on function private.entries_filter_clause(uuid, uuid[], text[], text) is
  'WHERE clause of entries_filtered_list/count for the caller, or null when they see nothing.';
grant execute on function private.entries_filter_clause(uuid, uuid[], text[], text)
  to authenticated, service_role;

-- Security definer: see the header (index use); the scope comes from entries_filter_clause.
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
  filter text := private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q);
begin
  if lim is null or lim < 1 or lim > 1000 then
    raise exception 'lim must be between 1 and 1000' using errcode = '22023';
  end if;
  if filter is null then
    return;
  end if;
  if before_id is not null then
    filter := filter || format(' and e.id < %s', before_id);
  end if;
  return query execute format(
    'select e.* from public.entries e where %s order by e.id desc limit %s', filter, lim);
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
  filter text := private.entries_filter_clause(target_workspace, device_uuids, hosts, search_q);
  total bigint;
begin
  if filter is null then
    return 0;
  end if;
  execute format('select count(*) from public.entries e where %s', filter) into total;
  return total;
end
$$;
comment on function public.entries_filtered_count(uuid, uuid[], text[], text) is
  'How many entries entries_filtered_list would return over all pages for the same filter.';
revoke execute on function public.entries_filtered_count(uuid, uuid[], text[], text)
  from public, anon;
grant execute on function public.entries_filtered_count(uuid, uuid[], text[], text)
  to authenticated, service_role;
