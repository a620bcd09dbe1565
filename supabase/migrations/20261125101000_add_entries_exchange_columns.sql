-- entries: method, status_code, duration_ms, request_bytes and response_bytes as native stored
-- generated columns (like host, url and path), so the traffic tools summarize and filter
-- captures without reading payload (001 §4.2 rule 1), plus the indexes those tools need.
-- The proxy still writes payload only; Postgres fills the columns on insert.
-- Cost: adding stored columns rewrites every partition under an ACCESS EXCLUSIVE lock (measured
-- 28 s for 1M captures on the 2-vCPU bench machine, its indexes rebuilt included; the proxy
-- queues captures meanwhile, spilling to its spool); the new indexes build in a few seconds.
-- A capture then costs ~10 % more to insert (61 -> 67 us per row in bulk) and ~10 % more disk.

-- The expressions never raise: a capture must never be refused (or dead-lettered by the proxy,
-- which treats 22xxx as bad data) because a field has an odd type or size.
create function private.jsonb_number_between(value jsonb, low numeric, high numeric)
returns numeric
language sql
immutable
set search_path = ''
as $$
  -- Nested, so the cast never sees a non-number (AND does not promise an evaluation order).
  select case when jsonb_typeof(value) = 'number' then
    case when value::numeric between low and high then value::numeric end
  end
$$;
comment on function private.jsonb_number_between(jsonb, numeric, numeric) is
  'value as a number when it is a JSON number within [low, high], else null; never raises. Used '
  'by the generated columns of entries: changing it does not recompute stored rows.';
-- Generated columns run with the inserting role's rights: the roles that write captures (the
-- proxy as service_role, importers as authenticated) must be able to call it.
grant execute on function private.jsonb_number_between(jsonb, numeric, numeric)
  to authenticated, service_role;

alter table public.entries
  add column method text generated always as (payload ->> 'method') stored,
  add column status_code smallint generated always as (
    trunc(private.jsonb_number_between(payload -> 'statusCode', 100, 599))::smallint) stored,
  add column duration_ms double precision generated always as (
    private.jsonb_number_between(payload -> 'timings' -> 'total', 0, 1e12)::double precision)
    stored,
  add column request_bytes bigint generated always as (
    trunc(private.jsonb_number_between(
      coalesce(payload -> 'sizes' -> 'requestBody', payload -> 'sizes' -> 'clientToServer'),
      0, 1e15))::bigint) stored,
  add column response_bytes bigint generated always as (
    trunc(private.jsonb_number_between(
      coalesce(payload -> 'sizes' -> 'responseBody', payload -> 'sizes' -> 'serverToClient'),
      0, 1e15))::bigint) stored;
comment on column public.entries.method is 'payload.method (generated): GET, POST, CONNECT, …';
comment on column public.entries.status_code is
  'payload.statusCode when it is a number in 100..599 (generated); null for tunnels, exchanges '
  'cut before an answer, and anything else. An error row carries the proxy''s 502.';
comment on column public.entries.duration_ms is
  'payload.timings.total in ms (generated); null when absent (a websocket''s close row has '
  'timings.open) or negative (-1: not applicable).';
comment on column public.entries.request_bytes is
  'Request body bytes (payload.sizes.requestBody; clientToServer for tunnels and websockets).';
comment on column public.entries.response_bytes is
  'Response body bytes (payload.sizes.responseBody; serverToClient for tunnels and websockets).';

-- Serves: summarize_device_traffic (device_uuid = X and ts in [from, to)): only that device's
-- rows of the window, where (ts) would read every device's and (device_uuid, id) every week's.
-- It carries every column the summary aggregates, so a window of all-visible pages is read
-- from the index alone: 31 days of a busy device (28k rows) in 54 ms instead of 88 ms, 7 days
-- in 15 instead of 25 (p50, 1M rows, docs/data-model.md); no slower to insert.
create index entries_device_uuid_ts_idx on public.entries (device_uuid, ts)
  include (id, kind, method, status_code, duration_ms, request_bytes, response_bytes, host, path);
-- Serves: inspect_entries status_classes when matches are sparse (the second step collects them
-- through this index instead of scanning the scope), e.g. 1xx or no status.
create index entries_status_code_idx on public.entries (status_code);
-- Serves: inspect_entries methods when matches are sparse (OPTIONS, PATCH, CONNECT, …).
create index entries_method_idx on public.entries (method);
