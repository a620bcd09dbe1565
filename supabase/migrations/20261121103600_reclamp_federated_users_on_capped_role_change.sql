-- 000 §4.5 rule 4, second review: lowering a client's capped_role re-clamps every account it
-- provisioned at once. Before, those accounts kept the old role (and every refreshed token its
-- capabilities) until their next hand-off, so demoting a leaked partner changed nothing for the
-- users it had already created.

-- Security definer: rewrites user_roles for accounts the updating admin may not otherwise touch,
-- and reads the private identity map.
create function private.reclamp_federated_users()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform private.clamp_federated_user(i.user_id, new.capped_role)
  from private.federation_identities i
  where i.client_id = new.client_id and i.provisioned;
  return null;
end
$$;
comment on function private.reclamp_federated_users() is
  'AFTER UPDATE OF capped_role on federation_clients: clamps every account the client '
  'provisioned to the new capped_role (000 §4.5 rule 4).';
revoke execute on function private.reclamp_federated_users() from public, anon, authenticated;

create trigger federation_clients_reclamp_federated_users
  after update of capped_role on public.federation_clients
  for each row when (old.capped_role is distinct from new.capped_role)
  execute function private.reclamp_federated_users();
