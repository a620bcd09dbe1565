-- Issue 19 audit: deleting a held breakpoint_events row (its owner may, by RLS, 20261121100900)
-- or its device (device_uuid ... on delete cascade) left the held client waiting for the hold
-- limit, because only a resume notified the holding proxy (20261125110000). Now a held row that
-- is deleted notifies proxy_breakpoint_deleted with "<id> <instance>", as a resume notifies
-- proxy_breakpoint_resumed, and the proxy holding it answers its client as aborted at once.
-- NOTIFY is sent at commit only, so a delete that rolls back releases nobody.

create function private.notify_breakpoint_deleted()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform pg_notify('proxy_breakpoint_deleted', old.id::text || ' ' || old.proxy_instance);
  return null;
end
$$;
comment on function private.notify_breakpoint_deleted() is
  'After a held breakpoint event held by a proxy is deleted (directly or with its device): '
  'tells the holding proxy ("<id> <instance>") to answer its client as aborted.';

-- Row level, so a cascade from a deleted device names every held row it removes.
create trigger breakpoint_events_notify_deleted after delete on public.breakpoint_events
  for each row
  when (old.resumed_at is null and old.proxy_instance is not null)
  execute function private.notify_breakpoint_deleted();
