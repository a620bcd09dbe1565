-- pgTAP: the farm-apps bucket and its policies on storage.objects (docs/farm.md "Android
-- devices", apk_object). A caller with farm:edit uploads, reads, replaces and deletes only under
-- their own folder (<uid>/…); an administrator reads every object of the bucket; without farm:edit
-- nothing; the policies say nothing about other buckets.
begin;
create extension if not exists pgtap with schema extensions;
select plan(27);

\ir helpers/actors.psql

-- b is a member also granted farm:edit; a is a plain member (no farm capability).
insert into public.roles (slug, name) values ('pgtap_farm', 'pgTAP farm');
insert into public.role_capabilities (role_id, section, action)
select id, 'farm', 'edit' from public.roles where slug = 'pgtap_farm';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_farm';

-- The storage service sets this for its own deletes; without it every DELETE is refused.
select set_config('storage.allow_delete_query', 'true', true);
insert into storage.buckets (id, name, public) values ('pgtap-other', 'pgtap-other', false);
insert into storage.objects (bucket_id, name) values
  ('farm-apps', pg_temp.uid('a') || '/a.apk'),
  ('farm-apps', pg_temp.uid('admin') || '/admin.apk');

select ok(exists (select 1 from storage.buckets
                   where id = 'farm-apps' and not public and file_size_limit = 104857600
                     and allowed_mime_types = array['application/vnd.android.package-archive',
                                                    'application/octet-stream']),
  'farm-apps is a private bucket capped at the farm''s APK limit, for APKs');
select is((select count(*)::int from pg_policies where schemaname = 'storage'
            and tablename = 'objects' and policyname like 'farm\_apps\_objects\_%'),
  4, 'storage.objects has one farm-apps policy per operation');

-- Uploading (INSERT): own folder, farm:edit.
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('farm-apps', '%s/b.apk')$$, pg_temp.uid('b'))),
  'ok:1', 'a caller with farm:edit uploads into their own folder');
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('farm-apps', '%s/planted.apk')$$, pg_temp.uid('a'))),
  'error:42501', 'a caller with farm:edit may not upload into another user''s folder');
select is(pg_temp.try_as('b', $$insert into storage.objects (bucket_id, name)
  values ('farm-apps', 'loose.apk')$$),
  'error:42501', 'an object outside any folder is refused');
select is(pg_temp.try_as('a', format($$insert into storage.objects (bucket_id, name)
  values ('farm-apps', '%s/mine.apk')$$, pg_temp.uid('a'))),
  'error:42501', 'a member without farm:edit may not upload even into their own folder');
select is(pg_temp.try_as('anon', $$insert into storage.objects (bucket_id, name)
  values ('farm-apps', 'anon/x.apk')$$),
  'error:42501', 'anon may not upload');
select is(pg_temp.try_as('admin', format($$insert into storage.objects (bucket_id, name)
  values ('farm-apps', '%s/second.apk')$$, pg_temp.uid('admin'))),
  'ok:1', 'an administrator uploads into their own folder');
select is(pg_temp.try_as('admin', format($$insert into storage.objects (bucket_id, name)
  values ('farm-apps', '%s/planted.apk')$$, pg_temp.uid('b'))),
  'error:42501', 'an administrator may not upload into another user''s folder');
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('pgtap-other', '%s/b.apk')$$, pg_temp.uid('b'))),
  'error:42501', 'the farm-apps policies grant nothing in another bucket');

-- Reading (SELECT): own folder with farm:edit; administrators everything in the bucket.
select is(pg_temp.value_as('b', $$select count(*)::text from storage.objects
  where bucket_id = 'farm-apps'$$),
  '1', 'a caller with farm:edit sees only their own folder''s objects');
select is(pg_temp.value_as('b', format($$select count(*)::text from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/admin.apk'$$, pg_temp.uid('admin'))),
  '0', 'a caller with farm:edit does not see another user''s object');
select is(pg_temp.value_as('a', $$select count(*)::text from storage.objects
  where bucket_id = 'farm-apps'$$),
  '0', 'a member without farm:edit sees nothing, not even their own folder');
select is(pg_temp.value_as('admin', $$select count(*)::text from storage.objects
  where bucket_id = 'farm-apps'$$),
  '4', 'an administrator sees every object of the bucket');
select is(pg_temp.value_as('anon', $$select count(*)::text from storage.objects
  where bucket_id = 'farm-apps'$$),
  '0', 'anon sees nothing');

-- Replacing (UPDATE): own folder, and the new name must stay there.
select is(pg_temp.try_as('b', format($$update storage.objects set metadata = '{"size":1}'
  where bucket_id = 'farm-apps' and name = '%s/b.apk'$$, pg_temp.uid('b'))),
  'ok:1', 'a caller with farm:edit replaces their own object');
select is(pg_temp.try_as('b', format($$update storage.objects set name = '%s/moved.apk'
  where bucket_id = 'farm-apps' and name = '%s/b.apk'$$, pg_temp.uid('a'), pg_temp.uid('b'))),
  'error:42501', 'a caller may not move their object into another user''s folder');
select is(pg_temp.try_as('b', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'farm-apps' and name = '%s/admin.apk'$$, pg_temp.uid('admin'))),
  'ok:0', 'a caller with farm:edit may not replace another user''s object');
select is(pg_temp.try_as('a', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'farm-apps' and name = '%s/a.apk'$$, pg_temp.uid('a'))),
  'ok:0', 'a member without farm:edit may not replace even their own object');
select is(pg_temp.try_as('admin', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'farm-apps' and name = '%s/b.apk'$$, pg_temp.uid('b'))),
  'ok:0', 'an administrator reads but does not replace another user''s object');
select is(pg_temp.try_as('admin', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'farm-apps' and name = '%s/admin.apk'$$, pg_temp.uid('admin'))),
  'ok:1', 'an administrator replaces their own object');

-- Deleting (DELETE): own folder, farm:edit.
select is(pg_temp.try_as('b', format($$delete from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/admin.apk'$$, pg_temp.uid('admin'))),
  'ok:0', 'a caller with farm:edit may not delete another user''s object');
select is(pg_temp.try_as('a', format($$delete from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/a.apk'$$, pg_temp.uid('a'))),
  'ok:0', 'a member without farm:edit may not delete even their own object');
select is(pg_temp.try_as('anon', $$delete from storage.objects where bucket_id = 'farm-apps'$$),
  'ok:0', 'anon deletes nothing');
select is(pg_temp.try_as('admin', format($$delete from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/b.apk'$$, pg_temp.uid('b'))),
  'ok:0', 'an administrator does not delete another user''s object');
select is(pg_temp.try_as('b', format($$delete from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/b.apk'$$, pg_temp.uid('b'))),
  'ok:1', 'a caller with farm:edit deletes their own object');
select is(pg_temp.try_as('admin', format($$delete from storage.objects
  where bucket_id = 'farm-apps' and name = '%s/admin.apk'$$, pg_temp.uid('admin'))),
  'ok:1', 'an administrator deletes their own object');

select * from finish();
rollback;
