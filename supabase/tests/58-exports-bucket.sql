-- pgTAP: the exports bucket and its policies on storage.objects (HAR exports saved from the
-- Captures page, browser_cdp screenshots saved with save_to). Any signed-in user uploads, reads,
-- replaces and deletes only under their own folder (<uid>/…); an administrator reads every object
-- of the bucket; anon nothing; the policies say nothing about other buckets.
begin;
create extension if not exists pgtap with schema extensions;
select plan(26);

\ir helpers/actors.psql

-- The storage service sets this for its own deletes; without it every DELETE is refused.
select set_config('storage.allow_delete_query', 'true', true);
insert into storage.buckets (id, name, public) values ('pgtap-other', 'pgtap-other', false);
insert into storage.objects (bucket_id, name) values
  ('exports', pg_temp.uid('a') || '/a.har'),
  ('exports', pg_temp.uid('admin') || '/admin.har');

select ok(exists (select 1 from storage.buckets
                   where id = 'exports' and not public and file_size_limit = 52428800
                     and allowed_mime_types = array['application/json', 'application/har+json',
                                                    'image/png', 'image/jpeg']),
  'exports is a private bucket capped at 50 MiB, for HAR, JSON, PNG and JPEG');
select is((select count(*)::int from pg_policies where schemaname = 'storage'
            and tablename = 'objects' and policyname like 'exports\_objects\_%'),
  4, 'storage.objects has one exports policy per operation');

-- Uploading (INSERT): own folder, any signed-in user.
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('exports', '%s/b.har')$$, pg_temp.uid('b'))),
  'ok:1', 'a member uploads into their own folder');
select is(pg_temp.try_as('viewer', format($$insert into storage.objects (bucket_id, name)
  values ('exports', '%s/v.png')$$, pg_temp.uid('viewer'))),
  'ok:1', 'a viewer uploads into their own folder too');
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('exports', '%s/planted.har')$$, pg_temp.uid('a'))),
  'error:42501', 'a member may not upload into another user''s folder');
select is(pg_temp.try_as('b', $$insert into storage.objects (bucket_id, name)
  values ('exports', 'loose.har')$$),
  'error:42501', 'an object outside any folder is refused');
select is(pg_temp.try_as('anon', $$insert into storage.objects (bucket_id, name)
  values ('exports', 'anon/x.har')$$),
  'error:42501', 'anon may not upload');
select is(pg_temp.try_as('admin', format($$insert into storage.objects (bucket_id, name)
  values ('exports', '%s/planted.har')$$, pg_temp.uid('b'))),
  'error:42501', 'an administrator may not upload into another user''s folder');
select is(pg_temp.try_as('b', format($$insert into storage.objects (bucket_id, name)
  values ('pgtap-other', '%s/b.har')$$, pg_temp.uid('b'))),
  'error:42501', 'the exports policies grant nothing in another bucket');

-- Reading (SELECT): own folder; administrators everything in the bucket.
select is(pg_temp.value_as('b', $$select count(*)::text from storage.objects
  where bucket_id = 'exports'$$),
  '1', 'a member sees only their own folder''s objects');
select is(pg_temp.value_as('a', format($$select count(*)::text from storage.objects
  where bucket_id = 'exports' and name = '%s/a.har'$$, pg_temp.uid('a'))),
  '1', 'a member sees their own object');
select is(pg_temp.value_as('b', format($$select count(*)::text from storage.objects
  where bucket_id = 'exports' and name = '%s/a.har'$$, pg_temp.uid('a'))),
  '0', 'a member does not see another user''s object');
select is(pg_temp.value_as('admin', $$select count(*)::text from storage.objects
  where bucket_id = 'exports'$$),
  '4', 'an administrator sees every object of the bucket');
select is(pg_temp.value_as('anon', $$select count(*)::text from storage.objects
  where bucket_id = 'exports'$$),
  '0', 'anon sees nothing');

-- Replacing (UPDATE): own folder, and the new name must stay there.
select is(pg_temp.try_as('b', format($$update storage.objects set metadata = '{"size":1}'
  where bucket_id = 'exports' and name = '%s/b.har'$$, pg_temp.uid('b'))),
  'ok:1', 'a member replaces their own object');
select is(pg_temp.try_as('b', format($$update storage.objects set name = '%s/moved.har'
  where bucket_id = 'exports' and name = '%s/b.har'$$, pg_temp.uid('a'), pg_temp.uid('b'))),
  'error:42501', 'a member may not move their object into another user''s folder');
select is(pg_temp.try_as('b', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'exports' and name = '%s/a.har'$$, pg_temp.uid('a'))),
  'ok:0', 'a member may not replace another user''s object');
select is(pg_temp.try_as('anon', $$update storage.objects set metadata = '{}'
  where bucket_id = 'exports'$$),
  'ok:0', 'anon replaces nothing');
select is(pg_temp.try_as('admin', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'exports' and name = '%s/b.har'$$, pg_temp.uid('b'))),
  'ok:0', 'an administrator reads but does not replace another user''s object');
select is(pg_temp.try_as('admin', format($$update storage.objects set metadata = '{}'
  where bucket_id = 'exports' and name = '%s/admin.har'$$, pg_temp.uid('admin'))),
  'ok:1', 'an administrator replaces their own object');

-- Deleting (DELETE): own folder only.
select is(pg_temp.try_as('b', format($$delete from storage.objects
  where bucket_id = 'exports' and name = '%s/admin.har'$$, pg_temp.uid('admin'))),
  'ok:0', 'a member may not delete another user''s object');
select is(pg_temp.try_as('anon', $$delete from storage.objects where bucket_id = 'exports'$$),
  'ok:0', 'anon deletes nothing');
select is(pg_temp.try_as('admin', format($$delete from storage.objects
  where bucket_id = 'exports' and name = '%s/b.har'$$, pg_temp.uid('b'))),
  'ok:0', 'an administrator does not delete another user''s object');
select is(pg_temp.try_as('b', format($$delete from storage.objects
  where bucket_id = 'exports' and name = '%s/b.har'$$, pg_temp.uid('b'))),
  'ok:1', 'a member deletes their own object');
select is(pg_temp.try_as('admin', format($$delete from storage.objects
  where bucket_id = 'exports' and name = '%s/admin.har'$$, pg_temp.uid('admin'))),
  'ok:1', 'an administrator deletes their own object');
select is((select count(*)::int from storage.objects where bucket_id = 'exports'),
  2, 'the refused writes left the other users'' objects in place');

select * from finish();
rollback;
