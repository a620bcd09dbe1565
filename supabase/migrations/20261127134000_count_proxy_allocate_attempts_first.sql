-- /allocate's failure limit per address (issue 21), counted before the call is answered: the
-- proxy used to ask "blocked?" and record a failure only after its answer, so calls sent
-- together all passed the check while the count stood still. Now each call takes a place in the
-- address's count for the minute in one atomic upsert, is refused when none is left, and gives
-- its place back when it succeeds (successful calls are never counted).

-- Takes a place for one call: `retry_after` 0 and the window the place is in, or the seconds
-- until the address may call again (and no window: nothing was taken).
create function private.begin_proxy_allocate_attempt(client_ip inet, per_minute integer)
returns table (retry_after integer, window_start timestamptz)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  this_window timestamptz := date_trunc('minute', now());
  taken integer;
begin
  -- The row lock of the upsert orders concurrent calls of one address: each sees the count the
  -- one before it left, and the update is skipped once the count is at the limit.
  insert into private.proxy_allocate_failures as f (client_ip, window_start, failures)
  values (begin_proxy_allocate_attempt.client_ip, this_window, 1)
  on conflict on constraint proxy_allocate_failures_pkey
  do update set failures = f.failures + 1
  where f.failures < begin_proxy_allocate_attempt.per_minute
  returning f.failures into taken;
  if taken is not null then
    return query select 0, this_window;
  else
    return query select
      greatest(1, ceil(extract(epoch from this_window + interval '1 minute' - now())))::int,
      null::timestamptz;
  end if;
end;
$$;
comment on function private.begin_proxy_allocate_attempt(inet, integer) is
  'Counts one /allocate call of an address for this minute before it is answered: retry_after 0 '
  'and the window counted in, or the seconds to wait. Security definer: the proxy runs as '
  'service_role, which has no privileges on private tables.';
revoke execute on function private.begin_proxy_allocate_attempt(inet, integer) from public;
grant execute on function private.begin_proxy_allocate_attempt(inet, integer) to service_role;

-- A call that succeeded (or whose client left) gives its place back, in the window it took it
-- in (a call begun at :59 and answered after the minute turned frees nobody else's place).
create function private.forgive_proxy_allocate_attempt(client_ip inet, window_start timestamptz)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.proxy_allocate_failures f
  set failures = greatest(0, f.failures - 1)
  where f.client_ip = forgive_proxy_allocate_attempt.client_ip
    and f.window_start = forgive_proxy_allocate_attempt.window_start
$$;
comment on function private.forgive_proxy_allocate_attempt(inet, timestamptz) is
  'Gives back the place an /allocate call took when it is not a failure. Security definer: as '
  'begin_proxy_allocate_attempt.';
revoke execute on function private.forgive_proxy_allocate_attempt(inet, timestamptz) from public;
grant execute on function private.forgive_proxy_allocate_attempt(inet, timestamptz) to service_role;

-- Replaced by the two above.
drop function private.proxy_allocate_blocked(inet, integer);
drop function private.record_proxy_allocate_failure(inet);
comment on table private.proxy_allocate_failures is
  'Failed /allocate calls (bad credentials, refused or invalid requests) per client address and '
  'minute, counting calls still being answered; written by private.begin_proxy_allocate_attempt.';
