-- The private bucket `exports` for what a person or their agent keeps from the console: HAR exports
-- saved from the Captures page (packages/dashboard/README.md "Captures") and browser_cdp
-- screenshots saved with save_to (docs/farm.md "Browser"). Both write as the caller, with their
-- own token, so these policies decide: any signed-in user keeps objects under their own folder
-- (`<their uid>/…`), and an administrator reads every one.

-- Private (public = false): nothing is served without a token or a signed URL. 52428800 (50 MiB)
-- holds a large HAR export; the MIME types are HAR (as JSON or application/har+json) and the
-- screenshots' PNG and JPEG.
insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('exports', 'exports', false, 52428800,
        array['application/json', 'application/har+json', 'image/png', 'image/jpeg'])
on conflict (id) do nothing;

-- One policy per operation. A folder is its first path segment (storage.foldername), as in
-- Supabase's access-control guide; no capability beyond being signed in, since a user only ever
-- reaches their own folder.
create policy exports_objects_select on storage.objects for select
  to authenticated
  using (bucket_id = 'exports'
    and ((storage.foldername(name))[1] = (select auth.uid()::text)
         or (select private.is_admin())));
create policy exports_objects_insert on storage.objects for insert
  to authenticated
  with check (bucket_id = 'exports'
    and (storage.foldername(name))[1] = (select auth.uid()::text));
create policy exports_objects_update on storage.objects for update
  to authenticated
  using (bucket_id = 'exports'
    and (storage.foldername(name))[1] = (select auth.uid()::text))
  with check (bucket_id = 'exports'
    and (storage.foldername(name))[1] = (select auth.uid()::text));
create policy exports_objects_delete on storage.objects for delete
  to authenticated
  using (bucket_id = 'exports'
    and (storage.foldername(name))[1] = (select auth.uid()::text));

comment on policy exports_objects_select on storage.objects is
  'exports: a signed-in user reads their own folder; an administrator reads all.';
comment on policy exports_objects_insert on storage.objects is
  'exports: a signed-in user uploads into their own folder only.';
comment on policy exports_objects_update on storage.objects is
  'exports: a signed-in user replaces objects in their own folder only.';
comment on policy exports_objects_delete on storage.objects is
  'exports: a signed-in user deletes objects in their own folder only.';
