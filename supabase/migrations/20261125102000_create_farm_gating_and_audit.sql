-- The farm (issue 16, docs/farm.md): two capability sections, the confirmations that gate
-- destructive farm calls, and the durable audit of every farm call.
--
-- Capabilities: `farm` (run the farm tools: shell, browser, Android apps) and `farm_scripts`
-- (evaluate script in a farm browser). Admin roles hold both; another role only when an admin
-- grants them in role settings, as for every section.

-- The one list of capability sections, in display order: whoami() reports over it and the check
-- constraint of role_capabilities must agree with it (pgTAP 52-farm.sql compares them).
create function private.capability_sections()
returns text[]
language sql
immutable
set search_path = ''
as $$
  select array['devices', 'entries', 'settings', 'services', 'tags', 'users', 'stats', 'status',
               'federation', 'farm', 'farm_scripts']
$$;
comment on function private.capability_sections() is
  'Every capability section (role_capabilities.section), in the order whoami() lists them.';
grant execute on function private.capability_sections() to authenticated, service_role;

alter table public.role_capabilities drop constraint role_capabilities_section_check;
alter table public.role_capabilities add constraint role_capabilities_section_check check (section in (
  'devices', 'entries', 'settings', 'services', 'tags', 'users', 'stats', 'status', 'federation',
  'farm', 'farm_scripts'));

-- whoami() now lists the sections from private.capability_sections() (unchanged otherwise).
create or replace function public.whoami()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  caller uuid := auth.uid();
  claims jsonb := coalesce(auth.jwt(), '{}'::jsonb);
  account_email text;
  role_list jsonb;
  admin boolean;
  capability_list jsonb;
  token_client_id text;
  token_label text;
begin
  -- The same refusal as the pre-request hook, for callers that reach this function without it
  -- (SQL, a deployment whose hook is not configured): a revoked token learns nothing.
  perform private.refuse_revoked_token();

  select u.email::text into account_email
  from auth.users u
  where u.id = caller and u.deleted_at is null;
  if not found then
    -- A signed token whose subject is no (longer a) user identifies no caller: 401, like a bad JWT.
    raise sqlstate 'PGRST' using
      message = json_build_object(
        'code', 'PGRST301', 'message', 'JWT names no user',
        'details', 'The token''s subject is not a user of this project; sign in again.',
        'hint', null)::text,
      detail = json_build_object(
        'status', 401,
        'headers', json_build_object(
          'WWW-Authenticate',
          'Bearer error="invalid_token", error_description="JWT names no user"'))::text;
  end if;

  -- Admin roles first, then by name: the first role is the one a badge shows.
  select coalesce(jsonb_agg(jsonb_build_object('slug', r.slug, 'name', r.name,
                                               'is_admin', r.is_admin)
                            order by r.is_admin desc, r.name, r.slug), '[]'::jsonb),
         coalesce(bool_or(r.is_admin), false)
    into role_list, admin
  from public.user_roles ur
  join public.roles r on r.id = ur.role_id
  where ur.user_id = caller;

  -- Every section x action has_capability grants (admin: all; edit implies view), so this list
  -- never disagrees with what RLS enforces. The sections are private.capability_sections().
  select coalesce(jsonb_agg(s.section || ':' || a.action order by s.position, a.position),
                  '[]'::jsonb)
    into capability_list
  from unnest(private.capability_sections()) with ordinality as s (section, position)
  cross join unnest(array['view', 'edit']) with ordinality as a (action, position)
  where public.has_capability(s.section, a.action);

  -- The token as recorded (label, client) when its jti is one of the caller's api_tokens rows;
  -- a session token has no row and reports its claims only.
  select t.client_id, t.label into token_client_id, token_label
  from public.api_tokens t
  where t.jti = claims ->> 'jti' and t.user_id = caller;

  return jsonb_build_object(
    'user_id', caller,
    'email', account_email,
    'roles', role_list,
    'capabilities', capability_list,
    'is_admin', admin,
    'token', jsonb_build_object(
      'jti', claims ->> 'jti',
      'client_id', coalesce(token_client_id, claims ->> 'client_id'),
      'label', token_label));
end
$$;
comment on function public.whoami() is
  'The caller: {user_id, email, roles: [{slug, name, is_admin}], capabilities: ["section:action"], '
  'is_admin, token: {jti, client_id, label}} (001 §5.4). Signed-in callers only; a revoked token '
  'or one naming no user is refused with 401.';

-- Confirmations of destructive farm calls (001 §4.1 "confirm-gated"): the first call stores what
-- would run and hands out a random token (only its SHA-256 is kept); a second call runs only
-- when the same user presents the token for the same tool and the same arguments (canonical JSON,
-- hashed) before it expires, and only once. Written and read only by the tool server.
create table private.farm_confirmations (
  id uuid primary key default gen_random_uuid(),
  token_sha256 bytea not null,
  user_id uuid not null references auth.users (id) on delete cascade,
  tool text not null,
  arguments_sha256 bytea not null,
  would_run text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  constraint farm_confirmations_token_key unique (token_sha256),
  constraint farm_confirmations_token_check check (octet_length(token_sha256) = 32),
  constraint farm_confirmations_arguments_check check (octet_length(arguments_sha256) = 32),
  constraint farm_confirmations_expiry_check check (expires_at > created_at)
);
comment on table private.farm_confirmations is
  'Pending and used confirmations of destructive farm calls (docs/farm.md "Gating").';
alter table private.farm_confirmations enable row level security;
revoke all on private.farm_confirmations from public, anon, authenticated, service_role;

-- Every farm call, durably (issue 16 "Gating"): asked (a confirmation handed out), refused
-- (capability, confirmation, validation), ran (with the outcome) or failed. Arguments are
-- redacted by the tool server before they are written. Admins read it over REST.
create table public.farm_audit (
  id bigint generated always as identity primary key,
  at timestamptz not null default now(),
  user_id uuid references auth.users (id) on delete set null,
  user_email text,
  token_jti text,
  client_id text,
  tool text not null,
  event text not null,
  arguments jsonb not null default '{}',
  outcome jsonb not null default '{}',
  duration_ms integer,
  confirmation_id uuid,
  constraint farm_audit_event_check check (event in ('asked', 'refused', 'ran', 'failed')),
  constraint farm_audit_tool_check check (tool ~ '^[a-z][a-z0-9_]{0,63}$'),
  constraint farm_audit_duration_check check (duration_ms >= 0)
);
comment on table public.farm_audit is
  'Farm calls: who (user, token, client), which tool, asked/refused/ran/failed, redacted arguments, '
  'outcome and timing. Written by the tool server only; readable by admins (farm:view).';
-- Serves: the newest-first audit listing and "what did this user run".
create index farm_audit_at_idx on public.farm_audit (at desc);
create index farm_audit_user_id_at_idx on public.farm_audit (user_id, at desc);

alter table public.farm_audit enable row level security;
revoke all on public.farm_audit from anon, authenticated;
grant select on public.farm_audit to authenticated;
-- Admins only: the log names other users and what they ran. has_capability keeps the check in the
-- one authorization function (an admin holds farm:view).
create policy farm_audit_select_admins on public.farm_audit for select to authenticated
  using ((select public.has_capability('farm', 'view')) and (select private.is_admin()));

-- Confirmations are of no use after their expiry; audit rows stay (they are the record).
create function private.sweep_farm_confirmations()
returns void
language sql
set search_path = ''
as $$
  delete from private.farm_confirmations where expires_at < now() - interval '1 day';
$$;
revoke execute on function private.sweep_farm_confirmations() from public, anon, authenticated,
  service_role;

select cron.schedule('farm-confirmations-sweep', '23 * * * *',
  'select private.sweep_farm_confirmations()');
