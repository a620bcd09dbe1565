-- The private bucket `farm-apps` for APKs that android_install_app installs by apk_object
-- (docs/farm.md "Android devices"). The tool server reads an object as the caller, with their own
-- token, so these policies decide what a caller may install: a person with farm:edit keeps
-- packages under their own folder (`<their uid>/…`), and an administrator reads every one.

-- Private (public = false): nothing is served without a token. 104857600 is the farm's
-- android.packageMaxBytes default (packages/farm/src/farm-config.ts), the most it installs.
insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('farm-apps', 'farm-apps', false, 104857600,
        array['application/vnd.android.package-archive', 'application/octet-stream'])
on conflict (id) do nothing;

-- One policy per operation. A folder is its first path segment (storage.foldername), as in
-- Supabase's access-control guide; farm:edit is the capability every farm tool needs.
create policy farm_apps_objects_select on storage.objects for select
  to authenticated
  using (bucket_id = 'farm-apps'
    and (select public.has_capability('farm', 'edit'))
    and ((storage.foldername(name))[1] = (select auth.uid()::text)
         or (select private.is_admin())));
create policy farm_apps_objects_insert on storage.objects for insert
  to authenticated
  with check (bucket_id = 'farm-apps'
    and (select public.has_capability('farm', 'edit'))
    and (storage.foldername(name))[1] = (select auth.uid()::text));
create policy farm_apps_objects_update on storage.objects for update
  to authenticated
  using (bucket_id = 'farm-apps'
    and (select public.has_capability('farm', 'edit'))
    and (storage.foldername(name))[1] = (select auth.uid()::text))
  with check (bucket_id = 'farm-apps'
    and (select public.has_capability('farm', 'edit'))
    and (storage.foldername(name))[1] = (select auth.uid()::text));
create policy farm_apps_objects_delete on storage.objects for delete
  to authenticated
  using (bucket_id = 'farm-apps'
    and (select public.has_capability('farm', 'edit'))
    and (storage.foldername(name))[1] = (select auth.uid()::text));

comment on policy farm_apps_objects_select on storage.objects is
  'farm-apps: a caller with farm:edit reads their own folder; an administrator reads all.';
comment on policy farm_apps_objects_insert on storage.objects is
  'farm-apps: a caller with farm:edit uploads into their own folder only.';
comment on policy farm_apps_objects_update on storage.objects is
  'farm-apps: a caller with farm:edit replaces objects in their own folder only.';
comment on policy farm_apps_objects_delete on storage.objects is
  'farm-apps: a caller with farm:edit deletes objects in their own folder only.';
