-- 000 §4.5 rule 4 beyond the exchange: an account the broker provisioned holds no app role but
-- its client's capped_role, whoever assigns roles later; plus the sweep of expired broker state.

create function private.keep_federated_users_capped()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  capped text;
begin
  select c.capped_role into capped
  from private.federation_identities i join public.federation_clients c on c.client_id = i.client_id
  where i.user_id = new.user_id and i.provisioned;
  if capped is not null
     and new.role_id <> (select r.id from public.roles r where r.slug = capped) then
    raise exception 'this account was provisioned by a federation partner and is capped to role %',
      capped using errcode = '42501';
  end if;
  return new;
end
$$;
comment on function private.keep_federated_users_capped() is
  'BEFORE INSERT/UPDATE on user_roles. Security definer: reads the private identity map the '
  'granting caller cannot see.';
revoke execute on function private.keep_federated_users_capped() from public, anon, authenticated;

create trigger user_roles_keep_federated_users_capped
  before insert or update on public.user_roles
  for each row execute function private.keep_federated_users_capped();

create function private.sweep_federation_state()
returns void
language sql
volatile
set search_path = ''
as $$
  delete from private.federation_codes where expires_at < now() - interval '1 hour';
  delete from private.federation_jtis where expires_at < now();
  delete from private.federation_rate_counters where window_start < now() - interval '2 minutes';
$$;
comment on function private.sweep_federation_state() is
  'Deletes expired codes, jtis and rate-limit windows (cron job federation-sweep).';
revoke execute on function private.sweep_federation_state() from public, anon, authenticated;

select cron.schedule('federation-sweep', '*/5 * * * *', 'select private.sweep_federation_state()');
