-- Status feed (002 §1, §2.2, §4.2, §5, §8): the single-row service_status snapshot written about
-- every 10 s by the status service (packages/status) with the service role. There is no
-- rpc/get_status: readers take the row, over REST or Realtime.
create table public.service_status (
  id smallint primary key default 1,
  snapshot jsonb not null,
  updated_at timestamptz not null default now(),
  constraint service_status_id_check check (id = 1),
  constraint service_status_snapshot_check check (jsonb_typeof(snapshot) = 'object')
);
comment on table public.service_status is
  'The status snapshot row (id = 1), replaced about every 10 s by the status service. If '
  'updated_at is older than about 30 s, the status service is down (002 §8).';

alter table public.service_status enable row level security;
revoke all on public.service_status from anon;
revoke insert, update, delete on public.service_status from authenticated;
create policy service_status_select on public.service_status for select to authenticated
  using ((select public.has_capability('status', 'view')));

alter publication supabase_realtime add table public.service_status;
