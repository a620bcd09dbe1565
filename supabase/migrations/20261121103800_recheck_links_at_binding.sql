-- 000 §4.5 rule 3, second review: the linking refusals are checked again when the link is made,
-- under a lock on the account. The broker reads the facts at consume time and binds later, so
-- two trusted hand-offs (two partners, or two subs of one) could both link one account, or a
-- link could land on an account that became an admin or another partner's in between.

create or replace function public.federation_broker_bind_identity(client_id text,
                                                                  partner_sub text,
                                                                  user_id uuid,
                                                                  provisioned boolean)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  bound private.federation_identities;
  capped text;
begin
  select * into bound from private.federation_identities i
  where i.client_id = federation_broker_bind_identity.client_id
    and i.partner_sub = federation_broker_bind_identity.partner_sub;
  if not found then
    if not federation_broker_bind_identity.provisioned then
      -- Serializes links to one account: a second binder waits here, then sees the first link.
      perform 1 from auth.users u where u.id = federation_broker_bind_identity.user_id
      for no key update;
      if not exists (
           select 1 from auth.users u
           where u.id = federation_broker_bind_identity.user_id
             and u.email_confirmed_at is not null)
         or exists (
           select 1 from public.user_roles ur join public.roles r on r.id = ur.role_id
           where ur.user_id = federation_broker_bind_identity.user_id and r.is_admin)
         or exists (
           select 1 from private.federation_identities i
           where i.user_id = federation_broker_bind_identity.user_id)
      then
        -- The broker falls back to a fresh account (rule 2).
        return jsonb_build_object('refused', true);
      end if;
    end if;
    -- Two first hand-offs of one partner user may race: the first binding wins, the loser's
    -- freshly made account is deleted by the broker.
    insert into private.federation_identities as i (client_id, partner_sub, user_id, provisioned)
    values (federation_broker_bind_identity.client_id, federation_broker_bind_identity.partner_sub,
            federation_broker_bind_identity.user_id, federation_broker_bind_identity.provisioned)
    on conflict on constraint federation_identities_pkey do nothing;
    select * into bound from private.federation_identities i
    where i.client_id = federation_broker_bind_identity.client_id
      and i.partner_sub = federation_broker_bind_identity.partner_sub;
  end if;
  if bound.provisioned then
    select c.capped_role into capped from public.federation_clients c
    where c.client_id = bound.client_id;
    perform private.clamp_federated_user(bound.user_id, capped);
  end if;
  return jsonb_build_object('refused', false, 'user_id', bound.user_id,
    'provisioned', bound.provisioned,
    'email', (select u.email from auth.users u where u.id = bound.user_id));
end
$$;
comment on function public.federation_broker_bind_identity(text, text, uuid, boolean) is
  'Broker only: maps (client_id, partner sub) to an account (first binding wins) and clamps a '
  'provisioned account to the client''s capped_role; returns the bound account, or '
  'refused = true when a link (provisioned = false) would break 000 §4.5 rule 3.';
