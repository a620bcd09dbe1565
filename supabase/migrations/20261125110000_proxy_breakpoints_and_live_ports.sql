-- Issue 19, capture proxy second round: breakpoints that hold live traffic, and ports for devices
-- added anywhere (002 §4.4).
--
-- Breakpoints (001 §2.2, §3): the proxy writes a held breakpoint_events row per paused exchange
-- and releases it when the row is resumed. It learns of resumes and of settings changes by
-- LISTEN/NOTIFY (never polling per request): the channels below. The row now names the proxy
-- instance holding it (so a second proxy leaves it alone, and a restarted one closes what it held)
-- and, when the proxy rather than a person resumed it, why (timeout, stop, restart, lost, client
-- gone).
--
-- Ports: a device inserted through the API (dashboard, mobile client: current_user authenticated
-- or service_role) gets its port at once from the pool the proxies registered, under the same
-- advisory lock as /allocate, so two proxies sharing the database never disagree; the proxies
-- hear of every port change and open or close listeners within a second.

alter table public.breakpoint_events
  add column proxy_instance text,
  add column closed_by_proxy text,
  add constraint breakpoint_events_proxy_instance_check
    check (proxy_instance is null or char_length(proxy_instance) between 1 and 200),
  add constraint breakpoint_events_closed_by_proxy_check check (
    closed_by_proxy is null
    or (closed_by_proxy in ('timeout', 'proxy_stopped', 'proxy_restarted', 'proxy_lost',
                            'client_gone')
        and resumed_at is not null));
comment on column public.breakpoint_events.proxy_instance is
  'The proxy instance holding this exchange (null for events recorded through the API). Other '
  'instances leave the row alone; the same instance closes it when it restarts.';
comment on column public.breakpoint_events.closed_by_proxy is
  'Why the proxy resumed the event itself: timeout (continued unchanged after the hold limit), '
  'proxy_stopped / proxy_restarted / proxy_lost (aborted: the proxy holding it went away), '
  'client_gone (aborted: the client hung up while held). Null when a person resumed it.';
-- Serves: the proxy's start-up and sweep ("what did this instance / a lost instance hold").
create index breakpoint_events_held_by_proxy_idx on public.breakpoint_events (proxy_instance)
  where resumed_at is null and proxy_instance is not null;

-- The guard of 20261121100900 with the two new columns: API callers set neither, and the holding
-- instance never changes. A modify names only the fields of its phase, so a wrong message is a
-- 400 for the caller, not a failure discovered by the proxy later.
create or replace function private.guard_breakpoint_transition()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  api_caller boolean := current_user in ('anon', 'authenticated');
  allowed_keys text[];
begin
  if tg_op = 'INSERT' then
    if api_caller and (new.resumed_at, new.resumed_by, new.resolution, new.modified_message,
                       new.proxy_instance, new.closed_by_proxy)
                      is distinct from (null::timestamptz, null::uuid, null::text, null::jsonb,
                                        null::text, null::text) then
      raise exception 'a new breakpoint event is held: leave the resume and proxy fields unset'
        using errcode = '23514';
    end if;
    return new;
  end if;
  -- The resumer's account was deleted (resumed_by ... on delete set null, which runs as the
  -- table owner): the history stays.
  if not api_caller and old.resumed_by is not null and new.resumed_by is null
     and (to_jsonb(new) - 'resumed_by') = (to_jsonb(old) - 'resumed_by') then
    return new;
  end if;
  if old.resumed_at is not null then
    raise exception 'breakpoint event % was already resumed', old.id using errcode = '23514';
  end if;
  if (new.device_uuid, new.request_id, new.phase, new.pattern, new.method, new.url, new.message,
      new.held_at, new.proxy_instance)
     is distinct from
     (old.device_uuid, old.request_id, old.phase, old.pattern, old.method, old.url, old.message,
      old.held_at, old.proxy_instance) then
    raise exception 'only resumed_at, resumed_by, resolution and modified_message may change'
      using errcode = '23514';
  end if;
  if api_caller and new.closed_by_proxy is not null then
    raise exception 'closed_by_proxy is set by the proxy only' using errcode = '23514';
  end if;
  if new.modified_message is not null then
    allowed_keys := case new.phase when 'request' then array['method', 'url', 'headers', 'body']
                                   else array['status', 'headers', 'body'] end;
    if jsonb_typeof(new.modified_message) <> 'object'
       or exists (select 1 from jsonb_object_keys(new.modified_message) k
                  where k <> all (allowed_keys)) then
      raise exception 'modified_message of a % breakpoint is an object with only %',
        new.phase, array_to_string(allowed_keys, ', ')
        using errcode = '22023';
    end if;
  end if;
  if new.resolution is not null then
    if api_caller then
      new.resumed_at := now();
      new.resumed_by := auth.uid();
    else
      new.resumed_at := coalesce(new.resumed_at, now());
    end if;
  end if;
  return new;
end
$$;

-- The proxy holding the event hears of its resume at once (payload: the event id, a space, the
-- holding instance, so every other proxy ignores it without a lookup).
create function private.notify_breakpoint_resumed()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify('proxy_breakpoint_resumed', new.id::text || ' ' || new.proxy_instance);
  return null;
end
$$;
create trigger breakpoint_events_notify_resumed after update on public.breakpoint_events
  for each row
  when (old.resumed_at is null and new.resumed_at is not null and new.proxy_instance is not null)
  execute function private.notify_breakpoint_resumed();

-- Breakpoint patterns live in the settings: every proxy reloads them when either table changes.
create function private.notify_proxy_settings_changed()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify('proxy_settings_changed', tg_table_name);
  return null;
end
$$;
create trigger settings_global_notify_proxy after insert or update or delete
  on public.settings_global for each statement
  execute function private.notify_proxy_settings_changed();
create trigger settings_device_notify_proxy after insert or update or delete
  on public.settings_device for each statement
  execute function private.notify_proxy_settings_changed();

-- Every proxy opens or closes listeners when a port is allocated, moved or freed anywhere.
create function private.notify_device_ports_changed()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify('proxy_device_ports_changed', tg_op);
  return null;
end
$$;
create trigger device_ports_notify_proxy after insert or update or delete
  on public.device_ports for each statement
  execute function private.notify_device_ports_changed();

-- The device port pool the proxies serve (PROXY_DEVICE_PORTS and PROXY_PORTS_PER_ACCOUNT), as
-- registered by the proxy at start: a device inserted through the API takes its port from it.
create table private.proxy_port_pool (
  id smallint primary key default 1,
  pool_start integer not null,
  pool_end integer not null,
  per_owner_limit integer not null,
  registered_at timestamptz not null default now(),
  constraint proxy_port_pool_single_row check (id = 1),
  constraint proxy_port_pool_range_check
    check (pool_start between 1024 and 65535 and pool_end between pool_start and 65535),
  constraint proxy_port_pool_limit_check check (per_owner_limit >= 1)
);
comment on table private.proxy_port_pool is
  'The device port pool the capture proxies serve, registered by each at start (every daemon '
  'must use the same); devices inserted through the API get their port from it.';
alter table private.proxy_port_pool enable row level security;
revoke all on private.proxy_port_pool from public, anon, authenticated, service_role;

-- Records the pool; returns the one registered before (null on first registration) so a proxy
-- configured differently can say so.
create function private.register_proxy_port_pool(
  pool_start integer, pool_end integer, per_owner_limit integer)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous jsonb;
begin
  select jsonb_build_object('pool_start', p.pool_start, 'pool_end', p.pool_end,
                            'per_owner_limit', p.per_owner_limit)
    into previous from private.proxy_port_pool p where p.id = 1;
  insert into private.proxy_port_pool as p (id, pool_start, pool_end, per_owner_limit)
  values (1, register_proxy_port_pool.pool_start, register_proxy_port_pool.pool_end,
          register_proxy_port_pool.per_owner_limit)
  on conflict (id) do update
    set pool_start = excluded.pool_start, pool_end = excluded.pool_end,
        per_owner_limit = excluded.per_owner_limit, registered_at = now();
  return previous;
end
$$;
revoke execute on function private.register_proxy_port_pool(integer, integer, integer) from public;
grant execute on function private.register_proxy_port_pool(integer, integer, integer)
  to service_role;

-- 002 §4.4: "dashboard-added devices have a port allocated automatically". Only inserts by API
-- callers: /allocate inserts as the function owner and allocates (and binds) the port itself.
-- Under /allocate's advisory lock, so the lowest free port is chosen once across every daemon.
-- An account at its port cap, or a full pool, leaves the device without a port rather than
-- refusing the insert (its /allocate then says why).
create function private.assign_device_port()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  pool record;
  chosen integer;
begin
  select p.pool_start, p.pool_end, p.per_owner_limit into pool
  from private.proxy_port_pool p where p.id = 1;
  if not found then
    return null;
  end if;
  perform pg_advisory_xact_lock(hashtext('private.allocate_device_port'));
  if exists (select 1 from public.device_ports p where p.device_uuid = new.uuid) then
    return null;
  end if;
  if (select count(*) from public.device_ports p join public.devices d on d.uuid = p.device_uuid
      where d.owner_user_id = new.owner_user_id) >= pool.per_owner_limit then
    return null;
  end if;
  select candidate into chosen
  from generate_series(pool.pool_start, pool.pool_end) as candidate
  where not exists (select 1 from public.device_ports p where p.port = candidate)
  order by candidate
  limit 1;
  if chosen is not null then
    insert into public.device_ports (device_uuid, port) values (new.uuid, chosen);
  end if;
  return null;
end
$$;
comment on function private.assign_device_port() is
  'After an API insert into devices: the lowest free port of private.proxy_port_pool, under the '
  '/allocate lock; none when the owner is at the cap or the pool is full.';
create trigger devices_assign_port after insert on public.devices
  for each row
  when (current_user in ('authenticated', 'service_role'))
  execute function private.assign_device_port();
