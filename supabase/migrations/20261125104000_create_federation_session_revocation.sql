-- Cascade revocation (issue 20, reference A1 "Auth0 enforce_cascade_revocation"): every session
-- the broker mints is recorded against the partner and the partner user that vouched for it, so
-- deleting or disabling the partner, or revoking one partner user, deletes exactly those
-- sessions. Deleting the auth.sessions row is what GoTrue's own logout does: the refresh tokens
-- go with it (on delete cascade) and GET /auth/v1/user answers 403 session_not_found to the
-- session's access tokens.

create table private.federation_sessions (
  session_id uuid primary key,
  client_id text not null references public.federation_clients (client_id) on delete cascade,
  partner_sub text not null,
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now()
);
comment on table private.federation_sessions is
  'auth.sessions minted by the federation broker, with the partner (client_id) and partner user '
  '(partner_sub) that vouched for them: what cascade revocation deletes. No foreign key to '
  'auth.sessions (Auth owns that table); the sweep drops rows whose session has ended.';
-- Serves: revoking one partner user's sessions; the primary key serves the sweep's anti-join.
create index federation_sessions_client_id_partner_sub_idx
  on private.federation_sessions (client_id, partner_sub);
-- Serves: the cascade from auth.users.
create index federation_sessions_user_id_idx on private.federation_sessions (user_id);
alter table private.federation_sessions enable row level security;
revoke all on private.federation_sessions from public, anon, authenticated, service_role;

-- Deletes the sessions the broker minted through a client (all of them, or one partner user's)
-- and answers how many sessions ended. Runs inside the caller's transaction, so a disable or a
-- delete and the sign-outs commit together.
create function private.revoke_federation_sessions(client_id text, partner_sub text default null)
returns integer
language sql
volatile
set search_path = ''
as $$
  with revoked as (
    delete from private.federation_sessions s
    where s.client_id = revoke_federation_sessions.client_id
      and (revoke_federation_sessions.partner_sub is null
           or s.partner_sub = revoke_federation_sessions.partner_sub)
    returning s.session_id
  ), ended as (
    delete from auth.sessions a where a.id in (select revoked.session_id from revoked) returning 1
  )
  select count(*)::integer from ended
$$;
revoke execute on function private.revoke_federation_sessions(text, text)
  from public, anon, authenticated, service_role;

-- Security definer: deletes auth.sessions and reads the private session map, neither of which
-- the admin who disables or deletes a client may touch.
create function private.revoke_sessions_of_withdrawn_client()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform private.revoke_federation_sessions(old.client_id);
  return case tg_op when 'DELETE' then old else new end;
end
$$;
comment on function private.revoke_sessions_of_withdrawn_client() is
  'BEFORE DELETE and AFTER UPDATE OF enabled (to false) on federation_clients: signs out every '
  'session the broker minted through the client (issue 20, cascade revocation).';
revoke execute on function private.revoke_sessions_of_withdrawn_client()
  from public, anon, authenticated, service_role;

-- Before the delete: the on-delete cascade would otherwise drop the map first and leave the
-- sessions running.
create trigger federation_clients_revoke_sessions_on_delete
  before delete on public.federation_clients
  for each row execute function private.revoke_sessions_of_withdrawn_client();

create trigger federation_clients_revoke_sessions_on_disable
  after update of enabled on public.federation_clients
  for each row when (old.enabled and not new.enabled)
  execute function private.revoke_sessions_of_withdrawn_client();

-- Security definer: writes the private session map and may delete an auth.sessions row. The
-- broker mints the session (Auth API) before it can record it, so the client is re-read here
-- under a share lock: a disable or delete that committed in between is seen (the lock waits for
-- it, then the row no longer qualifies) and the new session is ended at once instead of
-- escaping the cascade; one that comes later waits for this insert and then finds it.
create function public.federation_broker_record_session(client_id text, partner_sub text,
                                                        session_id uuid, user_id uuid)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform 1 from public.federation_clients c
  where c.client_id = federation_broker_record_session.client_id and c.enabled
  for share;
  if not found then
    delete from auth.sessions a
    where a.id = federation_broker_record_session.session_id
      and a.user_id = federation_broker_record_session.user_id;
    return false;
  end if;
  insert into private.federation_sessions (session_id, client_id, partner_sub, user_id)
  values (federation_broker_record_session.session_id, federation_broker_record_session.client_id,
          federation_broker_record_session.partner_sub, federation_broker_record_session.user_id);
  return true;
end
$$;
comment on function public.federation_broker_record_session(text, text, uuid, uuid) is
  'Broker only: records a session minted at /exchange under its client and partner user; when the '
  'client was disabled or deleted meanwhile, ends the session instead and answers false.';
revoke execute on function public.federation_broker_record_session(text, text, uuid, uuid)
  from public, anon, authenticated;
grant execute on function public.federation_broker_record_session(text, text, uuid, uuid)
  to service_role;

-- Security definer: deletes auth.sessions, after its own federation:edit + admin + confirm checks.
create function public.revoke_federation_user_sessions(client_id text, partner_sub text,
                                                       confirm boolean default false)
returns integer
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform private.require_federation_admin();
  perform private.require_confirm(confirm);
  return private.revoke_federation_sessions(revoke_federation_user_sessions.client_id,
                                            revoke_federation_user_sessions.partner_sub);
end
$$;
comment on function public.revoke_federation_user_sessions(text, text, boolean) is
  'Signs out every session the broker minted for one partner user (client_id, partner sub); '
  'other sessions of the same account are untouched. Needs federation:edit, an admin role and '
  'confirm => true. Answers how many sessions ended.';
revoke execute on function public.revoke_federation_user_sessions(text, text, boolean)
  from public, anon;
grant execute on function public.revoke_federation_user_sessions(text, text, boolean)
  to authenticated, service_role;

-- The sweep also forgets sessions that ended by themselves (sign-out, refresh-token reuse).
create or replace function private.sweep_federation_state()
returns void
language sql
volatile
set search_path = ''
as $$
  delete from private.federation_codes where expires_at < now() - interval '1 hour';
  delete from private.federation_jtis where expires_at < now();
  delete from private.federation_rate_counters where window_start < now() - interval '2 minutes';
  delete from private.federation_sessions s
  where not exists (select 1 from auth.sessions a where a.id = s.session_id);
$$;
