-- tags and entry_tags (001 §2.2): a user's labels and which entries carry them (section tags).
create table public.tags (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  name text not null,
  color text not null default '#888888',
  created_at timestamptz not null default now(),
  constraint tags_name_check check (char_length(btrim(name)) between 1 and 100),
  constraint tags_color_check check (color ~ '^#[0-9a-fA-F]{6}$')
);
comment on table public.tags is 'A user''s labels for entries; names are unique per owner, any case.';
-- Serves: unique names per owner and the ownership filter of the scoped policies.
create unique index tags_owner_user_id_name_idx on public.tags (owner_user_id, lower(name));

create table public.entry_tags (
  tag_id uuid not null references public.tags (id) on delete cascade,
  entry_id bigint not null,
  entry_ts timestamptz not null,
  tagged_at timestamptz not null default now(),
  tagged_by uuid references auth.users (id) on delete set null default auth.uid(),
  constraint entry_tags_pkey primary key (tag_id, entry_id),
  constraint entry_tags_entry_fkey foreign key (entry_id, entry_ts)
    references public.entries (id, ts) on delete cascade
);
comment on table public.entry_tags is
  'Tag-to-entry links; entry_ts is the entry''s ts (the partition key the link needs).';
-- Serves: an entry's tags, and entry deletes cascading to their links.
create index entry_tags_entry_idx on public.entry_tags (entry_id, entry_ts);

create trigger entry_tags_stamp_tagged_by before insert on public.entry_tags
  for each row execute function private.stamp_actor('tagged_by');

-- Security definer: entry_tags' policies ask which tags the caller owns independently of the
-- tags table's own RLS.
create function private.owned_tag_ids()
returns uuid[]
language sql
stable
security definer
set search_path = ''
as $$
  select coalesce(array_agg(t.id), '{}') from public.tags t where t.owner_user_id = auth.uid()
$$;
comment on function private.owned_tag_ids() is 'The ids of the tags the caller owns.';
grant execute on function private.owned_tag_ids() to authenticated, service_role;

alter table public.tags enable row level security;
alter table public.entry_tags enable row level security;
revoke all on public.tags, public.entry_tags from anon;
-- A link is deleted and re-created, never moved.
revoke update on public.entry_tags from authenticated;

create policy tags_select on public.tags for select to authenticated
  using ((select public.has_capability('tags', 'view'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy tags_insert on public.tags for insert to authenticated
  with check ((select public.has_capability('tags', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy tags_update on public.tags for update to authenticated
  using ((select public.has_capability('tags', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())))
  with check ((select public.has_capability('tags', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy tags_delete on public.tags for delete to authenticated
  using ((select public.has_capability('tags', 'edit'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));

create policy entry_tags_select on public.entry_tags for select to authenticated
  using ((select public.has_capability('tags', 'view'))
    and (tag_id = any ((select private.owned_tag_ids())::uuid[]) or (select private.is_admin())));
-- Tagging needs the caller's tag and an entry of the caller's devices.
create policy entry_tags_insert on public.entry_tags for insert to authenticated
  with check ((select public.has_capability('tags', 'edit'))
    and (((tag_id = any ((select private.owned_tag_ids())::uuid[]))
          and exists (
            select 1 from public.entries e
            where e.id = entry_id and e.ts = entry_ts
              and e.device_uuid = any ((select private.owned_device_uuids())::uuid[])))
         or (select private.is_admin())));
create policy entry_tags_delete on public.entry_tags for delete to authenticated
  using ((select public.has_capability('tags', 'edit'))
    and (tag_id = any ((select private.owned_tag_ids())::uuid[]) or (select private.is_admin())));

create trigger tags_require_tags_edit before insert or update or delete on public.tags
  for each statement execute function private.require_capability('tags', 'edit');
create trigger entry_tags_require_tags_edit before insert or delete on public.entry_tags
  for each statement execute function private.require_capability('tags', 'edit');
