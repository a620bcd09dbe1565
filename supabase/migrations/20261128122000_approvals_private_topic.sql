-- The Approvals page follows a person's pending farm calls on a private Realtime topic of their
-- own, `approvals:<user id>` (docs/realtime.md "Private channels", "Broadcast from the database";
-- docs/farm.md "Gating"), instead of postgres_changes: a row trigger broadcasts each change with
-- realtime.broadcast_changes(), and a policy on realtime.messages lets only the owner, holding
-- farm:edit, join that topic. Uses only what hosted Supabase Realtime provides.

-- Security definer: realtime.broadcast_changes() inserts into realtime.messages as the caller
-- (realtime.send() is security invoker), and no API role may insert there (no insert policy:
-- clients never write to this topic). The function's owner writes the row whoever changed the
-- action: the tool server, the owner's dashboard session, or the sweep.
create function private.broadcast_farm_pending_action_change()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform realtime.broadcast_changes(
    'approvals:' || coalesce(new.owner_user_id, old.owner_user_id)::text,
    tg_op, tg_op, tg_table_name, tg_table_schema, new, old);
  return null;
end
$$;
comment on function private.broadcast_farm_pending_action_change() is
  'Trigger: broadcasts a change of public.farm_pending_actions to the private topic '
  'approvals:<owner_user_id> (record and old_record as realtime.broadcast_changes sends them).';
revoke execute on function private.broadcast_farm_pending_action_change()
  from public, anon, authenticated, service_role;

create trigger farm_pending_actions_broadcast_change
  after insert or update or delete on public.farm_pending_actions
  for each row execute function private.broadcast_farm_pending_action_change();

-- Read only (no insert policy): a person joins their own approvals topic, with the capability
-- the Approvals page and a decision ask for; presence is not used there.
create policy messages_select_approvals_owner on realtime.messages
  for select to authenticated
  using (
    (select realtime.topic()) = 'approvals:' || (select auth.uid())::text
    and realtime.messages.extension = 'broadcast'
    and (select public.has_capability('farm', 'edit')));

-- Nothing subscribes to the table's postgres_changes any more.
alter publication supabase_realtime drop table public.farm_pending_actions;
