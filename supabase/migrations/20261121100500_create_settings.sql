-- settings_global and settings_device (001 §2.2): global defaults and per-device overrides. `data`
-- holds breakpoint patterns, env vars, ssl_proxy_domains and service_groups (ids to expand); see
-- effective_settings_for_device for how they merge.
create table public.settings_global (
  id smallint primary key default 1,
  data jsonb not null default '{}',
  updated_at timestamptz not null default now(),
  updated_by uuid references auth.users (id) on delete set null default auth.uid(),
  constraint settings_global_id_check check (id = 1),
  constraint settings_global_data_check check (jsonb_typeof(data) = 'object')
);
comment on table public.settings_global is
  'The one global settings row (id = 1). Readable with settings:view; only admins change it.';
insert into public.settings_global (id, data, updated_by) values (1, '{}', null);

create table public.settings_device (
  device_uuid uuid primary key references public.devices (uuid) on delete cascade,
  data jsonb not null default '{}',
  updated_at timestamptz not null default now(),
  updated_by uuid references auth.users (id) on delete set null default auth.uid(),
  constraint settings_device_data_check check (jsonb_typeof(data) = 'object')
);
comment on table public.settings_device is
  'Per-device overrides, merged over settings_global.data by effective_settings_for_device.';

-- Who changed the settings last: the caller's id (null for the service and SQL).
create function private.stamp_settings_change()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  new.updated_by := auth.uid();
  return new;
end
$$;

create trigger settings_global_stamp_change before update on public.settings_global
  for each row execute function private.stamp_settings_change();
create trigger settings_device_stamp_change before update on public.settings_device
  for each row execute function private.stamp_settings_change();
create trigger settings_device_stamp_updated_by before insert on public.settings_device
  for each row execute function private.stamp_actor('updated_by');

alter table public.settings_global enable row level security;
alter table public.settings_device enable row level security;
revoke all on public.settings_global, public.settings_device from anon;
-- The global row is created here and never inserted or deleted over the API.
revoke insert, delete on public.settings_global from authenticated;

create policy settings_global_select on public.settings_global for select to authenticated
  using ((select public.has_capability('settings', 'view')));
-- USING is the view scope so a non-admin editor gets 42501 from WITH CHECK, not a silent no-op.
create policy settings_global_update on public.settings_global for update to authenticated
  using ((select public.has_capability('settings', 'view')))
  with check ((select public.has_capability('settings', 'edit')) and (select private.is_admin()));

create policy settings_device_select on public.settings_device for select to authenticated
  using ((select public.has_capability('settings', 'view'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy settings_device_insert on public.settings_device for insert to authenticated
  with check ((select public.has_capability('settings', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy settings_device_update on public.settings_device for update to authenticated
  using ((select public.has_capability('settings', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())))
  with check ((select public.has_capability('settings', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));
create policy settings_device_delete on public.settings_device for delete to authenticated
  using ((select public.has_capability('settings', 'edit'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[]) or (select private.is_admin())));

create trigger settings_global_require_settings_edit before update on public.settings_global
  for each statement execute function private.require_capability('settings', 'edit');
create trigger settings_device_require_settings_edit
  before insert or update or delete on public.settings_device
  for each statement execute function private.require_capability('settings', 'edit');
