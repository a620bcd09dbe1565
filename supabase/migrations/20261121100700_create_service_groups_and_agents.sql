-- assistant_agents, service_groups and service_group_agents (001 §2.2), the services section:
-- the specialist-agent registry, wildcard SSL-proxy domain lists, and which agents serve a group
-- (exactly one of them primary, enforced here).
create function private.domains_are_valid(domains text[])
returns boolean
language sql
immutable
set search_path = ''
as $$
  select cardinality(domains) <= 1000 and coalesce(bool_and(
    d ~ '^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'
    and char_length(d) <= 253), true)
  from unnest(domains) as d
$$;
comment on function private.domains_are_valid(text[]) is
  'Lower-case host names, optionally with one leading "*." wildcard label; at most 1000.';
grant execute on function private.domains_are_valid(text[]) to authenticated, service_role;

create table public.assistant_agents (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid default auth.uid() references auth.users (id) on delete cascade,
  slug text not null,
  label text not null,
  instructions text not null default '',
  model text not null,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint assistant_agents_owner_user_id_slug_key unique nulls not distinct (owner_user_id, slug),
  constraint assistant_agents_slug_check check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  constraint assistant_agents_label_check check (char_length(btrim(label)) between 1 and 200),
  constraint assistant_agents_instructions_check check (char_length(instructions) <= 20000),
  constraint assistant_agents_model_check check (char_length(btrim(model)) between 1 and 200)
);
comment on table public.assistant_agents is
  'Specialist agents of the assistant. owner_user_id null: shared registry entries that everyone '
  'with services:view sees and only admins change.';

create table public.service_groups (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  name text not null,
  description text not null default '',
  ssl_proxy_domains text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint service_groups_name_check check (char_length(btrim(name)) between 1 and 200),
  constraint service_groups_ssl_proxy_domains_check check (
    private.domains_are_valid(ssl_proxy_domains))
);
comment on table public.service_groups is
  'A named list of SSL-proxy (interception) domains, e.g. {"*.example.com","api.example.org"}; '
  'settings reference groups by id and expand_service_groups unions their domains.';
-- Serves: the ownership filter of the scoped policies and private.owned_service_group_ids().
create index service_groups_owner_user_id_idx on public.service_groups (owner_user_id);

create table public.service_group_agents (
  id uuid primary key default gen_random_uuid(),
  group_id uuid not null references public.service_groups (id) on delete cascade,
  agent_id uuid not null references public.assistant_agents (id) on delete cascade,
  is_primary boolean not null default false,
  position integer not null default 0,
  created_at timestamptz not null default now(),
  constraint service_group_agents_group_id_agent_id_key unique (group_id, agent_id),
  constraint service_group_agents_position_check check (position >= 0),
  -- At most one primary per group, checked at commit so one upsert can move the flag.
  constraint service_group_agents_is_primary_excl exclude using btree (group_id with =)
    where (is_primary) deferrable initially deferred
);
comment on table public.service_group_agents is
  'Agents serving a service group, in position order. A group with agents has exactly one '
  'primary; move it with one upsert of both rows (on_conflict=id).';
-- Serves: agent deletes cascading to their memberships.
create index service_group_agents_agent_id_idx on public.service_group_agents (agent_id);

-- At least one primary: checked at commit for every group a row entered or left. Security
-- definer: the rule concerns every row of the group, including rows the caller cannot see (an
-- owner deleting their agent must not strip the primary from an admin's group unnoticed).
create function private.check_service_group_has_primary()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  touched uuid;
begin
  foreach touched in array array_remove(array[
    case when tg_op <> 'INSERT' then old.group_id end,
    case when tg_op <> 'DELETE' then new.group_id end], null)
  loop
    if exists (select 1 from public.service_group_agents a where a.group_id = touched)
       and not exists (
         select 1 from public.service_group_agents a where a.group_id = touched and a.is_primary)
    then
      raise exception 'service group % must have exactly one primary agent', touched
        using errcode = '23514',
              hint = 'Mark another agent primary in the same request (upsert both rows).';
    end if;
  end loop;
  return null;
end
$$;
create constraint trigger service_group_agents_one_primary
  after insert or update or delete on public.service_group_agents
  deferrable initially deferred
  for each row execute function private.check_service_group_has_primary();

-- Security definer: service_group_agents' policies ask which groups the caller owns
-- independently of service_groups' own RLS.
create function private.owned_service_group_ids()
returns uuid[]
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(array_agg(g.id), '{}') from public.service_groups g
  where g.owner_user_id = auth.uid()
$$;
comment on function private.owned_service_group_ids() is 'The ids of the groups the caller owns.';
grant execute on function private.owned_service_group_ids() to authenticated, service_role;

create trigger assistant_agents_touch_updated_at before update on public.assistant_agents
  for each row execute function private.touch_updated_at();
create trigger service_groups_touch_updated_at before update on public.service_groups
  for each row execute function private.touch_updated_at();

alter table public.assistant_agents enable row level security;
alter table public.service_groups enable row level security;
alter table public.service_group_agents enable row level security;
revoke all on public.assistant_agents, public.service_groups, public.service_group_agents from anon;

create policy assistant_agents_select on public.assistant_agents for select to authenticated
  using ((select public.has_capability('services', 'view'))
    and (owner_user_id is null or owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy assistant_agents_insert on public.assistant_agents for insert to authenticated
  with check ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy assistant_agents_update on public.assistant_agents for update to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())))
  with check ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy assistant_agents_delete on public.assistant_agents for delete to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));

create policy service_groups_select on public.service_groups for select to authenticated
  using ((select public.has_capability('services', 'view'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy service_groups_insert on public.service_groups for insert to authenticated
  with check ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy service_groups_update on public.service_groups for update to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())))
  with check ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy service_groups_delete on public.service_groups for delete to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));

-- Mirrors service_groups (001 §2.2); an agent linked in must be one the caller can see.
create policy service_group_agents_select on public.service_group_agents for select to authenticated
  using ((select public.has_capability('services', 'view'))
    and (group_id = any ((select private.owned_service_group_ids())::uuid[]) or (select private.is_admin())));
create policy service_group_agents_insert on public.service_group_agents for insert to authenticated
  with check ((select public.has_capability('services', 'edit'))
    and (group_id = any ((select private.owned_service_group_ids())::uuid[]) or (select private.is_admin()))
    and exists (select 1 from public.assistant_agents a where a.id = agent_id));
create policy service_group_agents_update on public.service_group_agents for update to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (group_id = any ((select private.owned_service_group_ids())::uuid[]) or (select private.is_admin())))
  with check ((select public.has_capability('services', 'edit'))
    and (group_id = any ((select private.owned_service_group_ids())::uuid[]) or (select private.is_admin()))
    and exists (select 1 from public.assistant_agents a where a.id = agent_id));
create policy service_group_agents_delete on public.service_group_agents for delete to authenticated
  using ((select public.has_capability('services', 'edit'))
    and (group_id = any ((select private.owned_service_group_ids())::uuid[]) or (select private.is_admin())));

create trigger assistant_agents_require_services_edit
  before insert or update or delete on public.assistant_agents
  for each statement execute function private.require_capability('services', 'edit');
create trigger service_groups_require_services_edit
  before insert or update or delete on public.service_groups
  for each statement execute function private.require_capability('services', 'edit');
create trigger service_group_agents_require_services_edit
  before insert or update or delete on public.service_group_agents
  for each statement execute function private.require_capability('services', 'edit');
