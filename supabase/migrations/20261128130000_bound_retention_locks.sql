-- Retention that never stalls capture ingest or reads (docs/scale.md, "Retention").
-- Detaching a partition takes an ACCESS EXCLUSIVE lock on entries, held to the end of the
-- transaction, and while that request waits behind a running query (a report, an export) every
-- new read and capture batch queues behind it: one long report stopped all ingest for as long as
-- it ran. Now:
-- - each wait for a lock is bounded (lock_wait, 500 ms: about the longest a capture batch takes on
--   a busy machine, so the job gets in between batches); three attempts a second apart, then the
--   partition is left, with a warning, for the next run;
-- - the rows are counted under a SHARE lock, which keeps deletes out but lets reads go on;
-- - the job drops at most one partition per run (one short transaction each), every 5 minutes,
--   so a backlog of expired weeks never holds entries for more than one detach at a time.
-- Called without arguments it drops every expired partition at once, as before.
drop function private.drop_expired_entries_partitions();
create function private.drop_expired_entries_partitions(
  max_partitions integer default null,
  lock_wait interval default interval '500 milliseconds')
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
  dropped_now boolean;
  previous_lock_timeout text := current_setting('lock_timeout');
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
    order by c.relname -- oldest first
  loop
    exit when max_partitions is not null and dropped >= max_partitions;
    dropped_now := false;
    for attempt in 1..3 loop
      begin
        -- A failed attempt's setting is rolled back with it; a successful one is undone below.
        perform set_config('lock_timeout', (extract(epoch from lock_wait) * 1000)::bigint || 'ms', true);
        -- Links reference entries by (id, ts); a referenced partition cannot be detached.
        execute format('delete from public.workspace_entries where entry_ts < %L', cutoff);
        execute format('delete from public.entry_tags where entry_ts < %L', cutoff);
        execute format('lock table %s in share mode', partition.rel);
        execute format('select count(*) from %s', partition.rel) into dropped_rows;
        execute format('alter table public.entries detach partition %s', partition.rel);
        execute format('drop table %s', partition.rel);
        update private.entry_totals set entries = entries - dropped_rows where id = 1;
        dropped := dropped + 1;
        dropped_now := true;
      exception when lock_not_available then
        if attempt < 3 then
          perform pg_sleep(1);
        end if;
      end;
      exit when dropped_now;
    end loop;
    if not dropped_now then
      raise warning 'entries retention: % is in use; left for the next run', partition.rel;
      exit; -- the younger ones wait their turn too
    end if;
  end loop;
  perform set_config('lock_timeout', previous_lock_timeout, true);
  return dropped;
end
$$;
comment on function private.drop_expired_entries_partitions(integer, interval) is
  'Drops entries partitions older than settings_global entries_retention_weeks, oldest first, at '
  'most max_partitions (all when null), waiting at most lock_wait for each lock; returns how many.';
revoke execute on function private.drop_expired_entries_partitions(integer, interval) from public;

-- The daily upkeep creates partitions ahead and drops at most one expired week, waiting up to 5 s
-- for its locks at that quiet hour: under ingest that never pauses, the retention job's short
-- waits may keep missing, and this one makes sure retention still moves. The retention job takes
-- the rest, one per run.
create or replace function private.maintain_entries_partitions()
returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  created integer := private.create_entries_partitions(now(), now() + interval '4 weeks');
  dropped integer := private.drop_expired_entries_partitions(1, interval '5 seconds');
begin
  return jsonb_build_object('created', created, 'dropped', dropped);
end
$$;

select cron.schedule('entries-retention', '*/5 * * * *',
  'select private.drop_expired_entries_partitions(1)');
