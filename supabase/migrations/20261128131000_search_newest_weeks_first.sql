-- A rare search no longer grows with the table (docs/scale.md, "What grows"). Step 2 of
-- entries_page_sql collected every match in the caller's scope through the trigram indexes of
-- every partition, then sorted them: at 10M captures a rare term took 2.4 times as long as at 1M.
-- Now step 2 reads windows of the newest weeks (one week, then at least twice as many, sized by
-- the density seen), each window's start given as a literal so only its partitions are read,
-- until a window holds a page; the page then comes from that window. Ids
-- follow capture order, but a HAR import or a spool replay gives an old timestamp a new id: before
-- trusting the weeks read, a range scan of the older partitions' primary keys (ids above the
-- page's lowest, empty in the normal case) looks for such a match, and when there is one the
-- page is collected from every week as before. So is a term with fewer than a page of matches.
create or replace function private.entries_page_sql(
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
  week_starts timestamptz[];
  window_weeks integer;
  floor_ts timestamptz;
  lowest_id bigint;
  older_newer_match boolean;
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

  -- Step 2: sparse matches, through the indexes, in windows of the newest weeks. Each window is
  -- one query (its oldest week's start a literal, so only its partitions and the empty ones ahead
  -- are read) that collects
  -- the window's matches and keeps the newest page; a window short of a page sizes the next from
  -- the density it saw (at least twice as many weeks), so the windows that fall short cost less
  -- than the one that does not, and a term too rare for any window ends at every week, as before.
  select array_agg(to_date(substr(c.relname, 10), 'YYYYMMDD')::timestamp at time zone 'UTC'
                   order by c.relname desc)
  into week_starts
  from pg_catalog.pg_inherits i
  join pg_catalog.pg_class c on c.oid = i.inhrelid
  where i.inhparent = 'public.entries'::regclass and c.relname ~ '^entries_w[0-9]{8}$'
    and to_date(substr(c.relname, 10), 'YYYYMMDD') <= (now() at time zone 'UTC')::date;
  window_weeks := 1;
  -- A window of more than half the weeks saves too little to be worth a query of its own.
  while week_starts is not null and window_weeks * 2 <= cardinality(week_starts) loop
    execute format(
      'with matches as materialized (select e.id from public.entries e where %s and %s '
      'and e.ts >= %L) select count(*), min(id) from (select id from matches order by id desc limit %s) m',
      scope, match, week_starts[window_weeks], lim)
    into window_hits, lowest_id;
    if window_hits >= lim then
      floor_ts := week_starts[window_weeks];
      exit;
    end if;
    -- No match at all predicts nothing (a week just begun): four times the weeks.
    window_weeks := case when window_hits = 0 then window_weeks * 4
      else greatest(window_weeks * 2, ceil(window_weeks * lim * 1.5 / window_hits)::integer) end;
  end loop;
  if floor_ts is not null then
    -- offset 0 keeps the match out of the scan, so the older weeks are read by id (their primary
    -- keys), not through the trigram indexes.
    execute format(
      'select exists (select 1 from (select e.id, e.host, e.path, e.url, e.method, e.status_code '
      'from public.entries e where %s and e.ts < %L and e.id > %s offset 0) e where %s)',
      scope, floor_ts, lowest_id, match)
    into older_newer_match;
    if not older_newer_match then
      scope := scope || format(' and e.ts >= %L', floor_ts);
    end if;
  end if;
  return format(
    'with matches as materialized (select e.id, e.ts from public.entries e where %s and %s) '
    'select %s from public.entries e '
    'join (select id, ts from matches order by id desc limit %s) m on m.id = e.id and m.ts = e.ts '
    'order by e.id desc',
    scope, match, columns, lim);
end
$$;
