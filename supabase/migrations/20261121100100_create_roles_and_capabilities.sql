-- App roles, their capabilities and user assignments, and has_capability(section, action): the
-- single authorization check every policy and RPC calls (001 §5 rule 5, architecture "Identity").
create table public.roles (
  id uuid primary key default gen_random_uuid(),
  slug text not null,
  name text not null,
  description text not null default '',
  is_admin boolean not null default false,
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  constraint roles_slug_key unique (slug),
  constraint roles_slug_check check (slug ~ '^[a-z][a-z0-9_-]{0,62}$'),
  constraint roles_name_check check (char_length(name) between 1 and 100)
);
comment on table public.roles is
  'App roles. An admin role holds every capability and reaches every row; any other role holds '
  'the capabilities listed in role_capabilities and reaches only rows its users own.';
comment on column public.roles.is_default is 'Assigned to every new auth user (at most one role).';
-- Serves: the new-user trigger's lookup of the default role; also enforces "at most one".
create unique index roles_is_default_idx on public.roles (is_default) where is_default;

create table public.role_capabilities (
  role_id uuid not null references public.roles (id) on delete cascade,
  section text not null,
  action text not null,
  constraint role_capabilities_pkey primary key (role_id, section, action),
  constraint role_capabilities_section_check check (section in (
    'devices', 'entries', 'settings', 'services', 'tags', 'users', 'stats', 'status', 'federation')),
  constraint role_capabilities_action_check check (action in ('view', 'edit'))
);
comment on table public.role_capabilities is
  'Capabilities `section:action` held by a non-admin role. `edit` implies `view`.';

create table public.user_roles (
  user_id uuid not null references auth.users (id) on delete cascade,
  role_id uuid not null references public.roles (id) on delete cascade,
  granted_at timestamptz not null default now(),
  granted_by uuid references auth.users (id) on delete set null default auth.uid(),
  constraint user_roles_pkey primary key (user_id, role_id)
);
comment on table public.user_roles is
  'Which app roles a user holds; capabilities are the union over them.';
-- Serves: role deletion cascades and "who holds role X".
create index user_roles_role_id_idx on public.user_roles (role_id);

-- Security definer: reads user_roles/roles/role_capabilities whatever the caller may see there,
-- because the answer is about the caller and the tables' own RLS calls this function.
create function public.has_capability(section text, action text)
returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select case
    -- The backend key (proxy, status service, cron-driven writers) holds every capability.
    when coalesce(auth.jwt() ->> 'role', '') = 'service_role' then true
    when auth.uid() is null then false
    else exists (
      select 1
      from public.user_roles ur
      join public.roles r on r.id = ur.role_id
      where ur.user_id = auth.uid()
        and (
          r.is_admin
          or exists (
            select 1
            from public.role_capabilities rc
            where rc.role_id = r.id
              and rc.section = has_capability.section
              and (rc.action = has_capability.action
                   or (has_capability.action = 'view' and rc.action = 'edit'))
          )
        )
    )
  end
$$;
comment on function public.has_capability(text, text) is
  'True when the caller holds capability section:action (admin roles hold all; edit implies view). '
  'Call it in policies as (select has_capability(…)) so it runs once per statement.';
revoke execute on function public.has_capability(text, text) from public, anon;
grant execute on function public.has_capability(text, text) to authenticated, service_role;

-- Security definer for the same reason as has_capability: it reads the caller's own role rows.
create function private.is_admin()
returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(auth.jwt() ->> 'role', '') = 'service_role'
    or exists (
      select 1 from public.user_roles ur join public.roles r on r.id = ur.role_id
      where ur.user_id = auth.uid() and r.is_admin
    )
$$;
comment on function private.is_admin() is
  'True when the caller holds an admin role (or is the service role): such callers reach every row.';
revoke execute on function private.is_admin() from public, anon;
grant execute on function private.is_admin() to authenticated, service_role;

-- Security definer: compares the target role with the caller's capabilities, which the caller
-- may not be allowed to read.
create function private.role_is_grantable(target_role_id uuid)
returns boolean
language sql
stable
security definer
set search_path = ''
as $$
  select private.is_admin()
    or (
      not exists (select 1 from public.roles r where r.id = target_role_id and r.is_admin)
      and not exists (
        select 1 from public.role_capabilities rc
        where rc.role_id = target_role_id and not public.has_capability(rc.section, rc.action)
      )
    )
$$;
comment on function private.role_is_grantable(uuid) is
  'A non-admin may assign only roles whose capabilities they hold themselves (no escalation).';
revoke execute on function private.role_is_grantable(uuid) from public, anon;
grant execute on function private.role_is_grantable(uuid) to authenticated, service_role;

-- Statement-level guard: a caller without the edit capability gets a permission error (001 §5
-- rule 5) even when RLS would have matched no row, instead of a silent empty success.
create function private.require_capability()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if current_user in ('anon', 'authenticated')
     and not public.has_capability(tg_argv[0], tg_argv[1]) then
    raise exception 'permission denied: capability %:% required to % %',
      tg_argv[0], tg_argv[1], lower(tg_op), tg_table_name
      using errcode = '42501',
            hint = 'Ask an administrator for a role that holds this capability.';
  end if;
  return null;
end
$$;
comment on function private.require_capability() is
  'BEFORE … FOR EACH STATEMENT trigger: raises 42501 (HTTP 403) when the API caller lacks '
  'capability tg_argv[0]:tg_argv[1].';

-- Attribution columns (granted_by, added_by, tagged_by, updated_by) record the API caller, not
-- what the request claims; the service and SQL may name someone (tg_argv[0]: the column).
create function private.stamp_actor()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if current_user in ('anon', 'authenticated') then
    new := jsonb_populate_record(new, jsonb_build_object(tg_argv[0], auth.uid()));
  end if;
  return new;
end
$$;

create trigger user_roles_stamp_granted_by before insert or update on public.user_roles
  for each row execute function private.stamp_actor('granted_by');

-- Security definer: inserts into user_roles on behalf of the auth service, which signs users up.
create function private.assign_default_role()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into public.user_roles (user_id, role_id, granted_by)
  select new.id, r.id, null from public.roles r where r.is_default
  on conflict do nothing;
  return new;
end
$$;
comment on function private.assign_default_role() is
  'After a user is created in auth.users, give them the default role if one is marked.';
revoke execute on function private.assign_default_role() from public, anon, authenticated;

create trigger on_auth_user_created_assign_default_role
  after insert on auth.users
  for each row execute function private.assign_default_role();

alter table public.roles enable row level security;
alter table public.role_capabilities enable row level security;
alter table public.user_roles enable row level security;
revoke all on public.roles, public.role_capabilities, public.user_roles from anon;

-- roles and role_capabilities: readable with users:view; only admins (with users:edit) change them.
create policy roles_select on public.roles for select to authenticated
  using ((select public.has_capability('users', 'view')));
create policy roles_insert on public.roles for insert to authenticated
  with check ((select public.has_capability('users', 'edit')) and (select private.is_admin()));
create policy roles_update on public.roles for update to authenticated
  using ((select public.has_capability('users', 'edit')) and (select private.is_admin()))
  with check ((select public.has_capability('users', 'edit')) and (select private.is_admin()));
create policy roles_delete on public.roles for delete to authenticated
  using ((select public.has_capability('users', 'edit')) and (select private.is_admin()));

create policy role_capabilities_select on public.role_capabilities for select to authenticated
  using ((select public.has_capability('users', 'view')));
create policy role_capabilities_insert on public.role_capabilities for insert to authenticated
  with check ((select public.has_capability('users', 'edit')) and (select private.is_admin()));
create policy role_capabilities_update on public.role_capabilities for update to authenticated
  using ((select public.has_capability('users', 'edit')) and (select private.is_admin()))
  with check ((select public.has_capability('users', 'edit')) and (select private.is_admin()));
create policy role_capabilities_delete on public.role_capabilities for delete to authenticated
  using ((select public.has_capability('users', 'edit')) and (select private.is_admin()));

-- user_roles: everyone sees their own assignments; users:view sees all; users:edit assigns roles
-- no stronger than the caller's own.
create policy user_roles_select on public.user_roles for select to authenticated
  using (user_id = (select auth.uid()) or (select public.has_capability('users', 'view')));
create policy user_roles_insert on public.user_roles for insert to authenticated
  with check ((select public.has_capability('users', 'edit')) and private.role_is_grantable(role_id));
create policy user_roles_update on public.user_roles for update to authenticated
  using ((select public.has_capability('users', 'edit')) and private.role_is_grantable(role_id))
  with check ((select public.has_capability('users', 'edit')) and private.role_is_grantable(role_id));
create policy user_roles_delete on public.user_roles for delete to authenticated
  using ((select public.has_capability('users', 'edit')) and private.role_is_grantable(role_id));

create trigger roles_require_users_edit before insert or update or delete on public.roles
  for each statement execute function private.require_capability('users', 'edit');
create trigger role_capabilities_require_users_edit
  before insert or update or delete on public.role_capabilities
  for each statement execute function private.require_capability('users', 'edit');
create trigger user_roles_require_users_edit before insert or update or delete on public.user_roles
  for each statement execute function private.require_capability('users', 'edit');

-- The two built-in roles. Production: make the first administrator with
--   insert into public.user_roles (user_id, role_id)
--   select '<auth user id>', id from public.roles where slug = 'admin';
insert into public.roles (slug, name, description, is_admin, is_default) values
  ('admin', 'Administrator', 'Every capability on every row.', true, false),
  ('member', 'Member', 'Own devices, captures, settings, services and tags.', false, true);
insert into public.role_capabilities (role_id, section, action)
select r.id, s.section, a.action
from public.roles r,
  unnest(array['devices', 'entries', 'settings', 'services', 'tags']) as s (section),
  unnest(array['view', 'edit']) as a (action)
where r.slug = 'member';
