-- pgTAP: tags and entry_tags policies (tags section; a link needs the caller's tag and an entry of
-- the caller's devices; links are never updated).
begin;
create extension if not exists pgtap with schema extensions;
select plan(44);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions('2000-01-03 00:00:00+00', '2000-01-03 00:00:00+00');
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer'));
insert into public.entries (id, ts, device_uuid, payload) values
  (990001, '2000-01-03 00:00:00+00', 'de000000-0000-4000-8000-0000000000a1', '{}'),
  (990002, '2000-01-03 00:00:00+00', 'de000000-0000-4000-8000-0000000000a1', '{}'),
  (990003, '2000-01-03 00:00:00+00', 'de000000-0000-4000-8000-0000000000b1', '{}'),
  (990004, '2000-01-03 00:00:00+00', 'de000000-0000-4000-8000-0000000000e1', '{}');
insert into public.tags (id, owner_user_id, name) values
  ('7a000000-0000-4000-8000-0000000000a1', pg_temp.uid('a'), 'pgtap ta'),
  ('7a000000-0000-4000-8000-0000000000a2', pg_temp.uid('a'), 'pgtap ta2'),
  ('7a000000-0000-4000-8000-0000000000b1', pg_temp.uid('b'), 'pgtap tb'),
  ('7a000000-0000-4000-8000-0000000000e1', pg_temp.uid('viewer'), 'pgtap tv'),
  ('7a000000-0000-4000-8000-0000000000f1', pg_temp.uid('none'), 'pgtap tn');
insert into public.entry_tags (tag_id, entry_id, entry_ts) values
  ('7a000000-0000-4000-8000-0000000000a1', 990001, '2000-01-03 00:00:00+00'),
  ('7a000000-0000-4000-8000-0000000000b1', 990003, '2000-01-03 00:00:00+00'),
  ('7a000000-0000-4000-8000-0000000000e1', 990004, '2000-01-03 00:00:00+00');

select ok((select bool_and(relrowsecurity) from pg_class
           where oid in ('public.tags'::regclass, 'public.entry_tags'::regclass)),
  'tags and entry_tags have row level security enabled');

-- tags
select policies_are('public', 'tags', array['tags_select', 'tags_insert', 'tags_update', 'tags_delete'],
  'tags has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.tags where name like 'pgtap%'$$), 'ok:5',
  'an admin sees every tag');
select is(pg_temp.try_as('a', $$select * from public.tags where name like 'pgtap%'$$), 'ok:2',
  'a member sees only their own tags');
select is(pg_temp.try_as('viewer', $$select * from public.tags where name like 'pgtap%'$$), 'ok:1',
  'a viewer sees their own tag');
select is(pg_temp.try_as('none', $$select * from public.tags where name like 'pgtap%'$$), 'ok:0',
  'a user without tags:view sees no tag, not even their own');
select is(pg_temp.try_as('anon', 'select * from public.tags'), 'error:42501', 'anon may not read tags');
select is(pg_temp.try_as('a', $$insert into public.tags (name) values ('pgtap ta3')$$), 'ok:1',
  'a member creates a tag');
select is(pg_temp.try_as('a', $$insert into public.tags (name) values ('PGTAP TA')$$), 'error:23505',
  'tag names are unique per owner whatever their case');
select is(pg_temp.try_as('b', $$insert into public.tags (name) values ('pgtap ta')$$), 'ok:1',
  'another user may use the same tag name');
select is(pg_temp.try_as('a', format($$insert into public.tags (name, owner_user_id) values ('pgtap x', %L)$$,
  pg_temp.uid('b'))), 'error:42501', 'a member may not create a tag for another user');
select is(pg_temp.try_as('viewer', $$insert into public.tags (name) values ('pgtap tv2')$$), 'error:42501',
  'a viewer may not create a tag');
select is(pg_temp.try_as('none', $$insert into public.tags (name) values ('pgtap tn2')$$), 'error:42501',
  'a user without a role may not create a tag');
select is(pg_temp.try_as('anon', $$insert into public.tags (name) values ('pgtap anon')$$), 'error:42501',
  'anon may not create a tag');
select is(pg_temp.try_as('admin', format($$insert into public.tags (name, owner_user_id) values ('pgtap tb2', %L)$$,
  pg_temp.uid('b'))), 'ok:1', 'an admin creates a tag for another user');
select is(pg_temp.try_as('a', $$update public.tags set color = '#000000' where id = '7a000000-0000-4000-8000-0000000000a1'$$),
  'ok:1', 'a member recolours their own tag');
select is(pg_temp.try_as('a', $$update public.tags set color = '#000000' where id = '7a000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member recolours no tag of another user');
select is(pg_temp.try_as('a', format($$update public.tags set owner_user_id = %L
  where id = '7a000000-0000-4000-8000-0000000000a1'$$, pg_temp.uid('b'))), 'error:42501',
  'a member may not hand their tag to another user');
select is(pg_temp.try_as('viewer', $$update public.tags set color = '#000000' where id = '7a000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not recolour their tag');
select is(pg_temp.try_as('admin', $$update public.tags set color = '#000000' where id = '7a000000-0000-4000-8000-0000000000b1'$$),
  'ok:1', 'an admin recolours any tag');
select is(pg_temp.try_as('a', $$delete from public.tags where id = '7a000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member deletes no tag of another user');
select is(pg_temp.try_as('viewer', $$delete from public.tags where id = '7a000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not delete their tag');
select is(pg_temp.try_as('anon', 'delete from public.tags'), 'error:42501', 'anon may not delete tags');
select is(pg_temp.try_as('a', $$delete from public.tags where id = '7a000000-0000-4000-8000-0000000000a2'$$), 'ok:1',
  'a member deletes their own tag');

-- entry_tags
select policies_are('public', 'entry_tags', array['entry_tags_select', 'entry_tags_insert', 'entry_tags_delete'],
  'entry_tags has exactly a select, an insert and a delete policy');
select is(pg_temp.try_as('admin', 'select * from public.entry_tags where entry_id between 990001 and 990004'), 'ok:3',
  'an admin sees every entry tag');
select is(pg_temp.try_as('a', 'select * from public.entry_tags where entry_id between 990001 and 990004'), 'ok:1',
  'a member sees the links of their own tags only');
select is(pg_temp.try_as('viewer', 'select * from public.entry_tags where entry_id between 990001 and 990004'), 'ok:1',
  'a viewer sees the links of their own tag');
select is(pg_temp.try_as('none', 'select * from public.entry_tags where entry_id between 990001 and 990004'), 'ok:0',
  'a user without tags:view sees no entry tag');
select is(pg_temp.try_as('anon', 'select * from public.entry_tags'), 'error:42501', 'anon may not read entry tags');
select is(pg_temp.try_as('a', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000a1', 990002, '2000-01-03 00:00:00+00')$$), 'ok:1',
  'a member tags an entry of their device with their tag');
select is(pg_temp.try_as('a', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000a1', 990003, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a member may not tag another user''s entry');
select is(pg_temp.try_as('a', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000b1', 990002, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a member may not use another user''s tag');
select is(pg_temp.try_as('viewer', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000e1', 990004, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a viewer may not tag an entry');
select is(pg_temp.try_as('anon', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000a1', 990002, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'anon may not tag an entry');
select is(pg_temp.try_as('admin', $$insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values ('7a000000-0000-4000-8000-0000000000a1', 990003, '2000-01-03 00:00:00+00')$$), 'ok:1',
  'an admin tags any entry with any tag');
select is(pg_temp.try_as('a', $$update public.entry_tags set entry_id = 990002
  where tag_id = '7a000000-0000-4000-8000-0000000000a1' and entry_id = 990001$$), 'error:42501',
  'a member may not move an entry tag');
select is(pg_temp.try_as('admin', $$update public.entry_tags set entry_id = 990002
  where tag_id = '7a000000-0000-4000-8000-0000000000b1'$$), 'error:42501', 'an admin may not move an entry tag');
select is(pg_temp.try_as('a', $$delete from public.entry_tags where tag_id = '7a000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member removes no link of another user''s tag');
select is(pg_temp.try_as('viewer', $$delete from public.entry_tags where tag_id = '7a000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not untag an entry');
select is(pg_temp.try_as('a', $$delete from public.entry_tags
  where tag_id = '7a000000-0000-4000-8000-0000000000a1' and entry_id = 990001$$), 'ok:1',
  'a member untags an entry');
select is(pg_temp.try_as('admin', $$delete from public.entry_tags where tag_id = '7a000000-0000-4000-8000-0000000000b1'$$),
  'ok:1', 'an admin removes any entry tag');

-- anon holds no privilege on these tables at all.
select is(pg_temp.try_as('anon', $$update public.tags set color = '#000000'$$), 'error:42501',
  'anon may not recolour a tag');
select is(pg_temp.try_as('anon', $$delete from public.entry_tags$$), 'error:42501',
  'anon may not untag an entry');

select * from finish();
rollback;
