-- workspaces, workspace_tabs, workspace_entries (001 §2.2): capture scopes, their tabs, and which
-- entries a workspace holds. They belong to the entries section: seeing or shaping captures.
create table public.workspaces (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  name text not null,
  description text not null default '',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workspaces_name_check check (char_length(btrim(name)) between 1 and 200)
);
comment on table public.workspaces is 'A named capture scope; entries join it via workspace_entries.';
-- Serves: the ownership filter of the scoped policies and private.owned_workspace_ids().
create index workspaces_owner_user_id_idx on public.workspaces (owner_user_id);

create table public.workspace_tabs (
  id uuid primary key default gen_random_uuid(),
  workspace_id uuid not null references public.workspaces (id) on delete cascade,
  title text not null,
  position integer not null default 0,
  state jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workspace_tabs_title_check check (char_length(btrim(title)) between 1 and 200),
  constraint workspace_tabs_position_check check (position >= 0),
  constraint workspace_tabs_state_check check (jsonb_typeof(state) = 'object')
);
comment on table public.workspace_tabs is
  'Tabs of a workspace in display order; state holds the tab''s filters and selection.';
-- Serves: a workspace's tabs in order.
create index workspace_tabs_workspace_id_position_idx on public.workspace_tabs (workspace_id, position);

create table public.workspace_entries (
  workspace_id uuid not null references public.workspaces (id) on delete cascade,
  entry_id bigint not null,
  entry_ts timestamptz not null,
  added_at timestamptz not null default now(),
  added_by uuid references auth.users (id) on delete set null default auth.uid(),
  note text,
  constraint workspace_entries_pkey primary key (workspace_id, entry_id),
  constraint workspace_entries_entry_fkey foreign key (entry_id, entry_ts)
    references public.entries (id, ts) on delete cascade,
  constraint workspace_entries_note_check check (char_length(note) <= 2000)
);
comment on table public.workspace_entries is
  'Entry-to-workspace links; entry_ts is the entry''s ts (the partition key the link needs).';
-- Serves: entry deletes cascading to their links.
create index workspace_entries_entry_idx on public.workspace_entries (entry_id, entry_ts);

create trigger workspace_entries_stamp_added_by before insert on public.workspace_entries
  for each row execute function private.stamp_actor('added_by');
create trigger workspaces_touch_updated_at before update on public.workspaces
  for each row execute function private.touch_updated_at();
create trigger workspace_tabs_touch_updated_at before update on public.workspace_tabs
  for each row execute function private.touch_updated_at();

-- Security definer: child-table policies ask which workspaces the caller owns independently of
-- the workspaces table's own RLS.
create function private.owned_workspace_ids()
returns uuid[]
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(array_agg(w.id), '{}') from public.workspaces w where w.owner_user_id = auth.uid()
$$;
comment on function private.owned_workspace_ids() is 'The ids of the workspaces the caller owns.';
grant execute on function private.owned_workspace_ids() to authenticated, service_role;

alter table public.workspaces enable row level security;
alter table public.workspace_tabs enable row level security;
alter table public.workspace_entries enable row level security;
revoke all on public.workspaces, public.workspace_tabs, public.workspace_entries from anon;

create policy workspaces_select on public.workspaces for select to authenticated
  using ((select public.has_capability('entries', 'view'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy workspaces_insert on public.workspaces for insert to authenticated
  with check ((select public.has_capability('entries', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy workspaces_update on public.workspaces for update to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())))
  with check ((select public.has_capability('entries', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy workspaces_delete on public.workspaces for delete to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));

create policy workspace_tabs_select on public.workspace_tabs for select to authenticated
  using ((select public.has_capability('entries', 'view'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
create policy workspace_tabs_insert on public.workspace_tabs for insert to authenticated
  with check ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
create policy workspace_tabs_update on public.workspace_tabs for update to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())))
  with check ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
create policy workspace_tabs_delete on public.workspace_tabs for delete to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));

-- A link needs both ends in scope: the caller's workspace and an entry of the caller's devices.
create policy workspace_entries_select on public.workspace_entries for select to authenticated
  using ((select public.has_capability('entries', 'view'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
create policy workspace_entries_insert on public.workspace_entries for insert to authenticated
  with check ((select public.has_capability('entries', 'edit'))
    and (((workspace_id = any ((select private.owned_workspace_ids())::uuid[]))
          and exists (
            select 1 from public.entries e
            where e.id = entry_id and e.ts = entry_ts
              and e.device_uuid = any ((select private.owned_device_uuids())::uuid[])))
         or (select private.is_admin())));
create policy workspace_entries_update on public.workspace_entries for update to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())))
  with check ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
create policy workspace_entries_delete on public.workspace_entries for delete to authenticated
  using ((select public.has_capability('entries', 'edit'))
    and (workspace_id = any ((select private.owned_workspace_ids())::uuid[]) or (select private.is_admin())));
-- Links are re-pointed by delete and insert, never by moving the entry reference.
revoke update on public.workspace_entries from authenticated;
grant update (note) on public.workspace_entries to authenticated;

create trigger workspaces_require_entries_edit
  before insert or update or delete on public.workspaces
  for each statement execute function private.require_capability('entries', 'edit');
create trigger workspace_tabs_require_entries_edit
  before insert or update or delete on public.workspace_tabs
  for each statement execute function private.require_capability('entries', 'edit');
create trigger workspace_entries_require_entries_edit
  before insert or update or delete on public.workspace_entries
  for each statement execute function private.require_capability('entries', 'edit');
