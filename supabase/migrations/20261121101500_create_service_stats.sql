-- Stats feed (002 §1, §2.1, §4.1, §5, §8): the single-row service_stats snapshot, get_stats(),
-- and the running counters that keep it fast as entries grows. Every INSERT, UPDATE and DELETE
-- statement on entries appends its counts to a delta log (appends never wait on each other);
-- the per-minute job folds the log into per-minute and per-hour counters and the total. A
-- snapshot reads counters plus the unfolded log: a few thousand rows, never the captures.

create table private.entry_totals (
  id smallint primary key default 1,
  entries bigint not null default 0,
  constraint entry_totals_id_check check (id = 1)
);
comment on table private.entry_totals is 'Running count of all entries (service_stats.total_entries).';
insert into private.entry_totals (id, entries)
select 1, count(*) from public.entries;

create table private.entry_counts_minutely (
  bucket timestamptz primary key,
  entries bigint not null
);
comment on table private.entry_counts_minutely is
  'Entries per capture minute (by ts), for entries_1h and requests_per_sec; pruned after 2 days.';

create table private.entry_counts_hourly (
  bucket timestamptz not null,
  dimension text not null,
  key text not null,
  entries bigint not null,
  constraint entry_counts_hourly_pkey primary key (bucket, dimension, key),
  constraint entry_counts_hourly_dimension_check check (
    dimension in ('total', 'status_class', 'source', 'host', 'device'))
);
comment on table private.entry_counts_hourly is
  'Entries per capture hour and dimension value (status class, source, host, device), for the '
  '24 h figures of the snapshot; pruned after 2 days.';

create table private.entry_count_deltas (
  granularity text not null,
  bucket timestamptz,
  dimension text not null,
  key text not null,
  entries bigint not null,
  constraint entry_count_deltas_granularity_check check (granularity in ('total', 'minute', 'hour'))
);
comment on table private.entry_count_deltas is
  'Counts appended per statement on entries (never updated, so writers never wait on each '
  'other); folded into the counters by private.fold_entry_counts().';

-- Statement triggers with transition tables: one append per INSERT, UPDATE or DELETE statement,
-- however many rows; an UPDATE counts its old rows out and its new rows in. Only the windows a
-- snapshot reads (two days) get minute and hour counts: older captures count in the total.
-- Security definer: any role that may write entries must append to the private log.
create function private.count_entries()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  side record;
begin
  for side in
    select * from (values ('old_rows', -1), ('new_rows', 1)) as v (rel, sign)
    where (v.rel = 'old_rows' and tg_op in ('UPDATE', 'DELETE'))
       or (v.rel = 'new_rows' and tg_op in ('UPDATE', 'INSERT'))
  loop
    execute format($sql$
      insert into private.entry_count_deltas (granularity, bucket, dimension, key, entries)
      select 'total', null, 'total', '', %2$s * count(*) from %1$I
      union all
      select 'minute', date_trunc('minute', c.ts), 'total', '', %2$s * count(*)
      from %1$I c where c.ts >= now() - interval '2 days'
      group by 2
      union all
      select 'hour', date_trunc('hour', c.ts), d.dimension, d.key, %2$s * count(*)
      from %1$I c
      cross join lateral (values
        ('total', ''),
        ('status_class', substr(c.payload ->> 'statusCode', 1, 1)),
        ('source', coalesce(c.payload ->> 'source', 'unknown')),
        ('host', coalesce(c.host, '')),
        ('device', coalesce(c.device_uuid::text, ''))
      ) as d (dimension, key)
      where c.ts >= now() - interval '2 days' and d.key is not null
        and (d.dimension <> 'status_class' or d.key in ('1', '2', '3', '4', '5'))
      group by 2, 3, 4
      $sql$, side.rel, side.sign);
  end loop;
  return null;
end
$$;
comment on function private.count_entries() is
  'Appends the counts of an INSERT, UPDATE or DELETE statement on entries to the delta log.';

create trigger entries_count_inserted after insert on public.entries
  referencing new table as new_rows
  for each statement execute function private.count_entries();
create trigger entries_count_updated after update on public.entries
  referencing old table as old_rows new table as new_rows
  for each statement execute function private.count_entries();
create trigger entries_count_deleted after delete on public.entries
  referencing old table as old_rows
  for each statement execute function private.count_entries();

-- Folds the delta log into the counters: one statement, so rows appended meanwhile stay for the
-- next fold. Called by the service-stats job.
create function private.fold_entry_counts()
returns void
language sql
set search_path = ''
as $$
  with moved as (
    delete from private.entry_count_deltas returning granularity, bucket, dimension, key, entries
  ), totals as (
    update private.entry_totals
    set entries = entries + coalesce((select sum(m.entries) from moved m where m.granularity = 'total'), 0)
    where id = 1
  ), minutes as (
    insert into private.entry_counts_minutely as c (bucket, entries)
    select m.bucket, sum(m.entries) from moved m where m.granularity = 'minute' group by m.bucket
    on conflict (bucket) do update set entries = c.entries + excluded.entries
  )
  insert into private.entry_counts_hourly as c (bucket, dimension, key, entries)
  select m.bucket, m.dimension, m.key, sum(m.entries)
  from moved m where m.granularity = 'hour'
  group by m.bucket, m.dimension, m.key
  on conflict (bucket, dimension, key) do update set entries = c.entries + excluded.entries
$$;

-- Backfill the windows the snapshot reads from what is already there (two days of captures).
insert into private.entry_counts_minutely (bucket, entries)
select date_trunc('minute', e.ts), count(*) from public.entries e
where e.ts >= now() - interval '2 days' group by 1;
insert into private.entry_counts_hourly (bucket, dimension, key, entries)
select date_trunc('hour', e.ts), d.dimension, d.key, count(*)
from public.entries e
cross join lateral (values
  ('total', ''),
  ('status_class', substr(e.payload ->> 'statusCode', 1, 1)),
  ('source', coalesce(e.payload ->> 'source', 'unknown')),
  ('host', coalesce(e.host, '')),
  ('device', coalesce(e.device_uuid::text, ''))
) as d (dimension, key)
where e.ts >= now() - interval '2 days' and d.key is not null
  and (d.dimension <> 'status_class' or d.key in ('1', '2', '3', '4', '5'))
group by 1, 2, 3;

-- A dropped partition takes its rows without a DELETE: retention subtracts them from the total.
create or replace function private.drop_expired_entries_partitions()
returns integer
language plpgsql
set search_path = ''
as $$
declare
  retention_weeks integer;
  cutoff timestamptz;
  partition record;
  dropped_rows bigint;
  dropped integer := 0;
begin
  -- Anything but a whole number of weeks counts as unset: a typo must not drop data or stop the job.
  select case when s.data ->> 'entries_retention_weeks' ~ '^[0-9]{1,4}$'
              then (s.data ->> 'entries_retention_weeks')::integer end
  into retention_weeks
  from public.settings_global s where s.id = 1;
  if retention_weeks is null or retention_weeks < 1 then
    return 0;
  end if;
  cutoff := private.entries_week_start(now()) - make_interval(weeks => retention_weeks);
  for partition in
    select c.oid::regclass as rel, c.relname
    from pg_catalog.pg_inherits i
    join pg_catalog.pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'public.entries'::regclass
      and c.relname ~ '^entries_w[0-9]{8}$'
      and to_date(substr(c.relname, 10), 'YYYYMMDD') + 7 <= (cutoff at time zone 'UTC')::date
  loop
    -- Links reference entries by (id, ts); a referenced partition cannot be detached.
    execute format('delete from public.workspace_entries where entry_ts < %L', cutoff);
    execute format('delete from public.entry_tags where entry_ts < %L', cutoff);
    -- Locked first, so no delete can commit between the count and the drop.
    execute format('lock table %s in access exclusive mode', partition.rel);
    execute format('select count(*) from %s', partition.rel) into dropped_rows;
    execute format('alter table public.entries detach partition %s', partition.rel);
    execute format('drop table %s', partition.rel);
    update private.entry_totals set entries = entries - dropped_rows where id = 1;
    dropped := dropped + 1;
  end loop;
  return dropped;
end
$$;

-- The snapshot of 002 §2.1. Windows: entries_1h and requests_per_sec (last 5 minutes) come from
-- minute counters; entries_24h, the mixes and the top lists from the last 24 hour counters
-- (the current hour and the 23 before it). connection_type_mix counts devices by how they
-- connect (device_status.source); source_mix counts the last 24 h of entries by capture source.
create function private.compute_stats()
returns jsonb
language sql
stable
set search_path = ''
as $$
  with hourly as (
    select u.dimension, u.key, sum(u.entries)::bigint as entries
    from (
      select h.dimension, h.key, h.entries from private.entry_counts_hourly h
      where h.bucket >= date_trunc('hour', now()) - interval '23 hours'
      union all
      select d.dimension, d.key, d.entries from private.entry_count_deltas d
      where d.granularity = 'hour' and d.bucket >= date_trunc('hour', now()) - interval '23 hours'
    ) as u
    group by u.dimension, u.key
    having sum(u.entries) > 0
  ), minutely as (
    select m.bucket, m.entries from private.entry_counts_minutely m
    union all
    select d.bucket, d.entries from private.entry_count_deltas d where d.granularity = 'minute'
  )
  select jsonb_build_object(
    'total_devices', (select count(*) from public.devices),
    'online_devices', (select count(*) from public.devices d
                       where d.last_seen_at > now() - private.online_window()),
    'total_entries', (select t.entries from private.entry_totals t where t.id = 1)
                     + (select coalesce(sum(d.entries), 0) from private.entry_count_deltas d
                        where d.granularity = 'total'),
    'entries_1h', (select coalesce(sum(m.entries), 0) from minutely m
                   where m.bucket >= date_trunc('minute', now()) - interval '59 minutes'),
    'entries_24h', coalesce((select h.entries from hourly h where h.dimension = 'total'), 0),
    'requests_per_sec', (select round(coalesce(sum(m.entries), 0) / 300.0, 3)
                         from minutely m
                         where m.bucket >= date_trunc('minute', now()) - interval '4 minutes'),
    'status_class_mix', (select coalesce(jsonb_object_agg(h.key, h.entries), '{}')
                         from hourly h where h.dimension = 'status_class'),
    'source_mix', (select coalesce(jsonb_object_agg(h.key, h.entries), '{}')
                   from hourly h where h.dimension = 'source'),
    'connection_type_mix', (select coalesce(jsonb_object_agg(c.label, c.devices), '{}')
                            from (select coalesce(s.source, 'unknown') as label,
                                         count(*) as devices
                                  from public.devices d
                                  left join public.device_status s on s.device_uuid = d.uuid
                                  group by 1) c),
    'top_domains', (select coalesce(jsonb_agg(jsonb_build_object('host', t.key, 'count', t.entries)
                                              order by t.entries desc, t.key), '[]')
                    from (select h.key, h.entries from hourly h
                          where h.dimension = 'host' and h.key <> ''
                          order by h.entries desc, h.key limit 10) t),
    'top_devices', (select coalesce(jsonb_agg(jsonb_build_object('device_uuid', t.key,
                                      'name', d.name, 'count', t.entries)
                                    order by t.entries desc, t.key), '[]')
                    from (select h.key, h.entries from hourly h
                          where h.dimension = 'device' and h.key <> ''
                          order by h.entries desc, h.key limit 10) t
                    join public.devices d on d.uuid::text = t.key),
    'generated_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;
comment on function private.compute_stats() is
  'The stats snapshot (002 §2.1) from the running counters; no capability check (callers do it).';

-- Security definer: fleet-wide figures over every user's devices and entries, for callers who
-- hold stats:view (002 §5), whatever rows they may read themselves.
create function public.get_stats()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if not public.has_capability('stats', 'view') then
    raise exception 'permission denied: capability stats:view required'
      using errcode = '42501';
  end if;
  return private.compute_stats();
end
$$;
comment on function public.get_stats() is
  'A freshly computed fleet-stats snapshot (002 §2.1, §4.1); needs stats:view.';
revoke execute on function public.get_stats() from public, anon;
grant execute on function public.get_stats() to authenticated, service_role;

create table public.service_stats (
  id smallint primary key default 1,
  snapshot jsonb not null,
  updated_at timestamptz not null default now(),
  constraint service_stats_id_check check (id = 1),
  constraint service_stats_snapshot_check check (jsonb_typeof(snapshot) = 'object')
);
comment on table public.service_stats is
  'The stats snapshot row (id = 1), replaced every 60 s by the pg_cron job service-stats. Read '
  'once (GET ?id=eq.1&select=snapshot) and follow its UPDATEs over Realtime; up to 60 s old.';

alter table public.service_stats enable row level security;
revoke all on public.service_stats from anon;
-- Written only by the job (postgres) and the service role.
revoke insert, update, delete on public.service_stats from authenticated;
create policy service_stats_select on public.service_stats for select to authenticated
  using ((select public.has_capability('stats', 'view')));

create function private.refresh_service_stats()
returns void
language sql
set search_path = ''
as $$
  select private.fold_entry_counts();
  insert into public.service_stats as s (id, snapshot, updated_at)
  values (1, private.compute_stats(), now())
  on conflict (id) do update set snapshot = excluded.snapshot, updated_at = excluded.updated_at;
  delete from private.entry_counts_minutely where bucket < now() - interval '2 days';
  delete from private.entry_counts_hourly where bucket < now() - interval '2 days';
$$;
comment on function private.refresh_service_stats() is
  'pg_cron job service-stats: folds the delta log, writes the snapshot row and prunes counters '
  'older than 2 days.';

select cron.schedule('service-stats', '* * * * *', 'select private.refresh_service_stats()');
select private.refresh_service_stats();

alter publication supabase_realtime add table public.service_stats;
