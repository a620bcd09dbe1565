-- 000 §4.5 rule 4, second review: a role some federation client caps its users to cannot be
-- turned into an admin role. upsert_federation_client refuses an admin capped_role, but flipping
-- roles.is_admin afterwards would have made every provisioned account an administrator.

-- Security definer: reads federation_clients, which only federation admins may select.
create function private.refuse_admin_capped_roles()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  if new.is_admin and exists (select 1 from public.federation_clients c
                              where c.capped_role in (old.slug, new.slug)) then
    raise exception 'role % is the capped_role of a federation client and cannot be an admin role',
      old.slug using errcode = '23514';
  end if;
  return new;
end
$$;
comment on function private.refuse_admin_capped_roles() is
  'BEFORE UPDATE OF is_admin on roles: a federation capped_role stays a non-admin role.';
revoke execute on function private.refuse_admin_capped_roles() from public, anon, authenticated;

create trigger roles_refuse_admin_capped_roles
  before update of is_admin on public.roles
  for each row when (new.is_admin and not old.is_admin)
  execute function private.refuse_admin_capped_roles();
