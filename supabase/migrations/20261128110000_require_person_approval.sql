-- A person approves, not the agent that asked (001 §4.1: "every destructive tool is
-- confirm-gated"; docs/farm.md "Gating", docs/assistant.md "Writes"). A destructive farm call
-- becomes a pending action that only its owner, signed in to the dashboard, approves or denies
-- (or the person answering an MCP elicitation in the client, recorded by the tool server); the
-- assistant's write proposals are confirmed only from a dashboard session too. An OAuth client's
-- token, which is what an agent holds, does neither.
--
-- private.is_dashboard_session() is the one test of "a first-party dashboard session";
-- public.farm_pending_actions replaces private.farm_confirmations, whose bearer token the agent
-- that asked could present itself; private.claim_assistant_proposal() now refuses other tokens.

-- Security definer: reads auth.sessions and every api_tokens row, which no API role may.
-- A dashboard session is a token of the project's auth service naming a live auth.sessions row
-- of its user. A token issued to an OAuth client is not one, even of the same user: it carries
-- client_id (as Supabase Auth's OAuth 2.1 server stamps it on every token it issues, its
-- "Token Security and Row Level Security" guide) or is recorded in api_tokens (every token the
-- tool server issues, the dashboard's own first-party exchange included).
create function private.is_dashboard_session()
returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(auth.jwt() ->> 'client_id', '') = ''
     and coalesce(auth.jwt() ->> 'is_anonymous', 'false') <> 'true'
     and not exists (select 1 from public.api_tokens t where t.jti = auth.jwt() ->> 'jti')
     and exists (
       select 1 from auth.sessions s
        where s.id = case
                when auth.jwt() ->> 'session_id'
                     ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                then (auth.jwt() ->> 'session_id')::uuid
              end
          and s.user_id = auth.uid()
          and (s.not_after is null or s.not_after > now()))
$$;
comment on function private.is_dashboard_session() is
  'Whether the request''s token is a live session of the project''s auth service (a person '
  'signed in to the dashboard), not a token issued to an OAuth client.';
revoke execute on function private.is_dashboard_session() from public, anon;
grant execute on function private.is_dashboard_session() to authenticated, service_role;

-- A destructive farm call waiting for a person (docs/farm.md "Gating"). The tool server writes
-- it when the call is first made: what would run, exactly as the person is shown it, bound to
-- the user, the tool, the exact arguments (SHA-256 of their canonical JSON) and the grant of the
-- OAuth client that asked (the token itself for a first-party token, which has no grant). The
-- owner approves or denies it from a dashboard session, once, before it expires; the tool server
-- runs it once, for that grant, and marks it used.
create table public.farm_pending_actions (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null references auth.users (id) on delete cascade,
  tool text not null,
  would_run text not null,
  arguments_sha256 bytea not null,
  client_id text not null,
  client_name text not null,
  grant_id uuid references private.oauth_grants (id) on delete cascade,
  token_jti text references public.api_tokens (jti) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  decision text,
  decided_at timestamptz,
  decided_via text,
  used_at timestamptz,
  constraint farm_pending_actions_tool_check check (tool ~ '^[a-z][a-z0-9_]{0,63}$'),
  constraint farm_pending_actions_arguments_check check (octet_length(arguments_sha256) = 32),
  constraint farm_pending_actions_binding_check check ((grant_id is null) <> (token_jti is null)),
  constraint farm_pending_actions_expiry_check check (expires_at > created_at),
  constraint farm_pending_actions_decision_check check (
    decision in ('approved', 'denied') and decided_at is not null
      and decided_via in ('dashboard', 'elicitation')
    or decision is null and decided_at is null and decided_via is null),
  constraint farm_pending_actions_used_check check (used_at is null or decision = 'approved')
);
comment on table public.farm_pending_actions is
  'Destructive farm calls awaiting a person (docs/farm.md "Gating"): the owner approves or denies '
  'one by setting decision from a dashboard session; decided_at and decided_via are stamped by '
  'the database. Written by the tool server; runs once, for the OAuth grant that asked.';
comment on column public.farm_pending_actions.would_run is
  'What the call will do, exactly as the agent and the person are shown it.';
comment on column public.farm_pending_actions.client_name is
  'The name the OAuth client registered (its own claim, shown beside client_id).';
comment on column public.farm_pending_actions.grant_id is
  'The OAuth grant whose tokens may run it; null for a first-party token (then token_jti).';
comment on column public.farm_pending_actions.decided_via is
  'dashboard (a person''s session, over the API) or elicitation (the person answered in the MCP '
  'client, recorded by the tool server).';
-- Serves: the Approvals page (the owner's actions, newest first) and the policies' owner filter.
create index farm_pending_actions_owner_user_id_created_at_idx
  on public.farm_pending_actions (owner_user_id, created_at desc);
-- Serves: grant deletion cascades.
create index farm_pending_actions_grant_id_idx on public.farm_pending_actions (grant_id);
-- Serves: token deletion cascades.
create index farm_pending_actions_token_jti_idx on public.farm_pending_actions (token_jti);
-- Serves: the hourly sweep of expired actions.
create index farm_pending_actions_expires_at_idx on public.farm_pending_actions (expires_at);

-- Decided once, by the database's clock: a decision never changes, and an API caller's decision
-- is recorded as the dashboard's whatever the request says (it may set nothing else anyway).
create function private.stamp_farm_pending_action_decision()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if old.decision is not null and new.decision is distinct from old.decision then
    raise exception 'pending action % was already %', old.id, old.decision
      using errcode = '23514';
  end if;
  if old.decision is null and new.decision is not null then
    new.decided_at := now();
    new.decided_via := case when current_user in ('anon', 'authenticated') then 'dashboard'
                            else coalesce(new.decided_via, 'dashboard') end;
  end if;
  return new;
end
$$;
create trigger farm_pending_actions_stamp_decision before update on public.farm_pending_actions
  for each row execute function private.stamp_farm_pending_action_decision();

alter table public.farm_pending_actions enable row level security;
revoke all on public.farm_pending_actions from anon, authenticated;
grant select on public.farm_pending_actions to authenticated;
grant update (decision) on public.farm_pending_actions to authenticated;

-- The owner's own only: an admin reads other users' farm calls in farm_audit, not here.
create policy farm_pending_actions_select_owner on public.farm_pending_actions
  for select to authenticated
  using (owner_user_id = (select auth.uid()) and (select public.has_capability('farm', 'view')));
-- 001 §4.1: the gate holds against the agent. A pending, unexpired action of the owner is
-- visible to update to any of their tokens, and the check refuses (42501, HTTP 403) every token
-- but a dashboard session: an OAuth client learns it may not, rather than seeing nothing change.
create policy farm_pending_actions_update_owner_in_dashboard on public.farm_pending_actions
  for update to authenticated
  using (owner_user_id = (select auth.uid())
    and (select public.has_capability('farm', 'edit'))
    and decision is null and used_at is null and expires_at > now())
  with check (owner_user_id = (select auth.uid())
    and (select public.has_capability('farm', 'edit'))
    and (select private.is_dashboard_session()));

create trigger farm_pending_actions_require_farm_edit
  before update on public.farm_pending_actions
  for each statement execute function private.require_capability('farm', 'edit');

-- The Approvals page lists them live (docs/realtime.md: each change checked against RLS).
alter publication supabase_realtime add table public.farm_pending_actions;

-- An action is of no use a day after its expiry; the audit keeps the record.
create function private.sweep_farm_pending_actions()
returns void
language sql
set search_path = ''
as $$
  delete from public.farm_pending_actions where expires_at < now() - interval '1 day';
$$;
revoke execute on function private.sweep_farm_pending_actions() from public, anon, authenticated,
  service_role;

select cron.unschedule('farm-confirmations-sweep');
select cron.schedule('farm-pending-actions-sweep', '23 * * * *',
  'select private.sweep_farm_pending_actions()');
drop function private.sweep_farm_confirmations();
drop table private.farm_confirmations;

-- Security definer: marks the proposal applied (private table) in the caller's transaction; the
-- write itself is done by the invoker (assistant_confirm_write) under RLS. Unchanged but for its
-- first check: a proposal is confirmed by a person in the dashboard (docs/assistant.md
-- "Writes"), so any other token, an MCP client's OAuth token among them, is refused with 403.
create or replace function private.claim_assistant_proposal(proposal uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  found_row private.assistant_proposals%rowtype;
begin
  if not private.is_dashboard_session() then
    raise sqlstate 'PT403' using message = 'confirm in the dashboard',
      detail = 'A proposed write is confirmed by a person signed in to the dashboard, not with '
               'an OAuth client''s token.';
  end if;
  select * into found_row from private.assistant_proposals p
  where p.id = proposal and p.user_id = auth.uid()
  for update;
  -- Another user's proposal answers exactly like one that does not exist.
  if not found or found_row.expires_at < now() then
    raise sqlstate 'PT404' using message = 'confirmation not found',
      detail = 'No pending proposal with this confirmation for you (unknown or expired).';
  end if;
  if found_row.applied_at is not null then
    raise sqlstate 'PT409' using message = 'confirmation already used',
      detail = format('This write was applied at %s; it is not applied twice.',
        found_row.applied_at);
  end if;
  update private.assistant_proposals set applied_at = now() where id = proposal;
  return jsonb_build_object('action', found_row.action, 'arguments', found_row.arguments);
end
$$;
comment on function public.assistant_confirm_write(uuid) is
  'Applies a write the assistant proposed to the caller, once, from a dashboard session only: '
  '403 (PT403) for any other token (an OAuth client''s), 404 (PT404) for an unknown, expired or '
  'another user''s confirmation, 409 (PT409) for one already used. Runs under the caller''s RLS '
  'and capabilities (tags:edit).';
