-- pgTAP: workspaces, workspace_tabs and workspace_entries policies (entries section; tabs and links
-- via workspace ownership, a new link also needs an entry of the caller's devices).
begin;
create extension if not exists pgtap with schema extensions;
select plan(68);

\ir helpers/actors.psql

-- Entries at a fixed time (its partition is made here) so links can name (id, ts).
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
insert into public.workspaces (id, name, owner_user_id) values
  ('3b000000-0000-4000-8000-0000000000a1', 'pgtap wa', pg_temp.uid('a')),
  ('3b000000-0000-4000-8000-0000000000a2', 'pgtap wa2', pg_temp.uid('a')),
  ('3b000000-0000-4000-8000-0000000000b1', 'pgtap wb', pg_temp.uid('b')),
  ('3b000000-0000-4000-8000-0000000000e1', 'pgtap wv', pg_temp.uid('viewer')),
  ('3b000000-0000-4000-8000-0000000000f1', 'pgtap wn', pg_temp.uid('none'));
insert into public.workspace_tabs (id, workspace_id, title) values
  ('3c000000-0000-4000-8000-0000000000a1', '3b000000-0000-4000-8000-0000000000a1', 'pgtap ta'),
  ('3c000000-0000-4000-8000-0000000000b1', '3b000000-0000-4000-8000-0000000000b1', 'pgtap tb'),
  ('3c000000-0000-4000-8000-0000000000e1', '3b000000-0000-4000-8000-0000000000e1', 'pgtap tv');
insert into public.workspace_entries (workspace_id, entry_id, entry_ts) values
  ('3b000000-0000-4000-8000-0000000000a1', 990001, '2000-01-03 00:00:00+00'),
  ('3b000000-0000-4000-8000-0000000000b1', 990003, '2000-01-03 00:00:00+00'),
  ('3b000000-0000-4000-8000-0000000000e1', 990004, '2000-01-03 00:00:00+00');

select ok((select bool_and(relrowsecurity) from pg_class
           where oid in ('public.workspaces'::regclass, 'public.workspace_tabs'::regclass,
                         'public.workspace_entries'::regclass)),
  'workspaces, workspace_tabs and workspace_entries have row level security enabled');

-- workspaces
select policies_are('public', 'workspaces',
  array['workspaces_select', 'workspaces_insert', 'workspaces_update', 'workspaces_delete'],
  'workspaces has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.workspaces where name like 'pgtap%'$$), 'ok:5',
  'an admin sees every workspace');
select is(pg_temp.try_as('a', $$select * from public.workspaces where name like 'pgtap%'$$), 'ok:2',
  'a member sees only their own workspaces');
select is(pg_temp.try_as('viewer', $$select * from public.workspaces where name like 'pgtap%'$$), 'ok:1',
  'a viewer sees their own workspace');
select is(pg_temp.try_as('none', $$select * from public.workspaces where name like 'pgtap%'$$), 'ok:0',
  'a user without entries:view sees no workspace, not even their own');
select is(pg_temp.try_as('anon', 'select * from public.workspaces'), 'error:42501', 'anon may not read workspaces');
select is(pg_temp.try_as('a', $$insert into public.workspaces (name) values ('pgtap wa3')$$), 'ok:1',
  'a member creates a workspace');
select is(pg_temp.try_as('a', format($$insert into public.workspaces (name, owner_user_id) values ('pgtap x', %L)$$,
  pg_temp.uid('b'))), 'error:42501', 'a member may not create a workspace for another user');
select is(pg_temp.try_as('viewer', $$insert into public.workspaces (name) values ('pgtap wv2')$$), 'error:42501',
  'a viewer may not create a workspace');
select is(pg_temp.try_as('none', $$insert into public.workspaces (name) values ('pgtap wn2')$$), 'error:42501',
  'a user without a role may not create a workspace');
select is(pg_temp.try_as('anon', $$insert into public.workspaces (name) values ('pgtap anon')$$), 'error:42501',
  'anon may not create a workspace');
select is(pg_temp.try_as('admin', format($$insert into public.workspaces (name, owner_user_id) values ('pgtap wb2', %L)$$,
  pg_temp.uid('b'))), 'ok:1', 'an admin creates a workspace for another user');
select is(pg_temp.try_as('a', $$update public.workspaces set description = 'x'
  where id = '3b000000-0000-4000-8000-0000000000a1'$$), 'ok:1', 'a member changes their own workspace');
select is(pg_temp.try_as('a', $$update public.workspaces set description = 'x'
  where id = '3b000000-0000-4000-8000-0000000000b1'$$), 'ok:0', 'a member changes no workspace of another user');
select is(pg_temp.try_as('a', format($$update public.workspaces set owner_user_id = %L
  where id = '3b000000-0000-4000-8000-0000000000a1'$$, pg_temp.uid('b'))), 'error:42501',
  'a member may not hand their workspace to another user');
select is(pg_temp.try_as('viewer', $$update public.workspaces set description = 'x'
  where id = '3b000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not change their workspace');
select is(pg_temp.try_as('admin', $$update public.workspaces set description = 'x'
  where id = '3b000000-0000-4000-8000-0000000000b1'$$), 'ok:1', 'an admin changes any workspace');
select is(pg_temp.try_as('a', $$delete from public.workspaces where id = '3b000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member deletes no workspace of another user');
select is(pg_temp.try_as('viewer', $$delete from public.workspaces where id = '3b000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not delete their workspace');
select is(pg_temp.try_as('anon', 'delete from public.workspaces'), 'error:42501', 'anon may not delete a workspace');
select is(pg_temp.try_as('a', $$delete from public.workspaces where id = '3b000000-0000-4000-8000-0000000000a2'$$),
  'ok:1', 'a member deletes their own workspace');

-- workspace_tabs
select policies_are('public', 'workspace_tabs',
  array['workspace_tabs_select', 'workspace_tabs_insert', 'workspace_tabs_update', 'workspace_tabs_delete'],
  'workspace_tabs has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.workspace_tabs where title like 'pgtap%'$$), 'ok:3',
  'an admin sees every tab');
select is(pg_temp.try_as('a', $$select * from public.workspace_tabs where title like 'pgtap%'$$), 'ok:1',
  'a member sees the tabs of their own workspaces only');
select is(pg_temp.try_as('viewer', $$select * from public.workspace_tabs where title like 'pgtap%'$$), 'ok:1',
  'a viewer sees the tabs of their own workspace');
select is(pg_temp.try_as('none', $$select * from public.workspace_tabs where title like 'pgtap%'$$), 'ok:0',
  'a user without entries:view sees no tab');
select is(pg_temp.try_as('anon', 'select * from public.workspace_tabs'), 'error:42501', 'anon may not read tabs');
select is(pg_temp.try_as('a', $$insert into public.workspace_tabs (workspace_id, title)
  values ('3b000000-0000-4000-8000-0000000000a1', 'pgtap ta2')$$), 'ok:1', 'a member adds a tab to their workspace');
select is(pg_temp.try_as('a', $$insert into public.workspace_tabs (workspace_id, title)
  values ('3b000000-0000-4000-8000-0000000000b1', 'pgtap x')$$), 'error:42501',
  'a member may not add a tab to another user''s workspace');
select is(pg_temp.try_as('none', $$insert into public.workspace_tabs (workspace_id, title)
  values ('3b000000-0000-4000-8000-0000000000f1', 'pgtap tn')$$), 'error:42501',
  'a user without a role may not add a tab to their workspace');
select is(pg_temp.try_as('admin', $$insert into public.workspace_tabs (workspace_id, title)
  values ('3b000000-0000-4000-8000-0000000000b1', 'pgtap tb2')$$), 'ok:1', 'an admin adds a tab to any workspace');
select is(pg_temp.try_as('a', $$update public.workspace_tabs set position = 3
  where id = '3c000000-0000-4000-8000-0000000000a1'$$), 'ok:1', 'a member moves a tab of their workspace');
select is(pg_temp.try_as('a', $$update public.workspace_tabs set position = 3
  where id = '3c000000-0000-4000-8000-0000000000b1'$$), 'ok:0', 'a member moves no tab of another user');
select is(pg_temp.try_as('a', $$update public.workspace_tabs set workspace_id = '3b000000-0000-4000-8000-0000000000b1'
  where id = '3c000000-0000-4000-8000-0000000000a1'$$), 'error:42501',
  'a member may not move a tab into another user''s workspace');
select is(pg_temp.try_as('viewer', $$update public.workspace_tabs set position = 3
  where id = '3c000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not change a tab');
select is(pg_temp.try_as('anon', 'update public.workspace_tabs set position = 3'), 'error:42501',
  'anon may not change a tab');
select is(pg_temp.try_as('a', $$delete from public.workspace_tabs where id = '3c000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member deletes no tab of another user');
select is(pg_temp.try_as('viewer', $$delete from public.workspace_tabs where id = '3c000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not delete a tab');
select is(pg_temp.try_as('a', $$delete from public.workspace_tabs where id = '3c000000-0000-4000-8000-0000000000a1'$$),
  'ok:1', 'a member deletes a tab of their workspace');
select is(pg_temp.try_as('admin', $$delete from public.workspace_tabs where id = '3c000000-0000-4000-8000-0000000000b1'$$),
  'ok:1', 'an admin deletes any tab');

-- workspace_entries
select policies_are('public', 'workspace_entries',
  array['workspace_entries_select', 'workspace_entries_insert', 'workspace_entries_update',
        'workspace_entries_delete'],
  'workspace_entries has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', 'select * from public.workspace_entries where entry_id between 990001 and 990004'),
  'ok:3', 'an admin sees every link');
select is(pg_temp.try_as('a', 'select * from public.workspace_entries where entry_id between 990001 and 990004'),
  'ok:1', 'a member sees the links of their own workspaces only');
select is(pg_temp.try_as('viewer', 'select * from public.workspace_entries where entry_id between 990001 and 990004'),
  'ok:1', 'a viewer sees the links of their own workspace');
select is(pg_temp.try_as('none', 'select * from public.workspace_entries where entry_id between 990001 and 990004'),
  'ok:0', 'a user without entries:view sees no link');
select is(pg_temp.try_as('anon', 'select * from public.workspace_entries'), 'error:42501', 'anon may not read links');
select is(pg_temp.try_as('a', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000a1', 990002, '2000-01-03 00:00:00+00')$$), 'ok:1',
  'a member links an entry of their device into their workspace');
select is(pg_temp.try_as('a', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000a1', 990003, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a member may not link another user''s entry into their workspace');
select is(pg_temp.try_as('a', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000b1', 990002, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a member may not link their entry into another user''s workspace');
select is(pg_temp.try_as('viewer', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000e1', 990004, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'a viewer may not link an entry');
select is(pg_temp.try_as('anon', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000a1', 990002, '2000-01-03 00:00:00+00')$$), 'error:42501',
  'anon may not link an entry');
select is(pg_temp.try_as('admin', $$insert into public.workspace_entries (workspace_id, entry_id, entry_ts)
  values ('3b000000-0000-4000-8000-0000000000a1', 990003, '2000-01-03 00:00:00+00')$$), 'ok:1',
  'an admin links any entry into any workspace');
select is(pg_temp.try_as('a', $$update public.workspace_entries set note = 'seen'
  where workspace_id = '3b000000-0000-4000-8000-0000000000a1' and entry_id = 990001$$), 'ok:1',
  'a member annotates a link of their workspace');
select is(pg_temp.try_as('a', $$update public.workspace_entries set note = 'seen'
  where workspace_id = '3b000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member annotates no link of another user''s workspace');
select is(pg_temp.try_as('a', $$update public.workspace_entries set entry_id = 990002
  where workspace_id = '3b000000-0000-4000-8000-0000000000a1' and entry_id = 990001$$), 'error:42501',
  'a member may not re-point a link to another entry');
select is(pg_temp.try_as('viewer', $$update public.workspace_entries set note = 'seen'
  where workspace_id = '3b000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not annotate a link');
select is(pg_temp.try_as('admin', $$update public.workspace_entries set note = 'checked'
  where workspace_id = '3b000000-0000-4000-8000-0000000000b1'$$), 'ok:1', 'an admin annotates any link');
select is(pg_temp.try_as('a', $$delete from public.workspace_entries
  where workspace_id = '3b000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member removes no link of another user''s workspace');
select is(pg_temp.try_as('viewer', $$delete from public.workspace_entries
  where workspace_id = '3b000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not remove a link');
select is(pg_temp.try_as('anon', 'delete from public.workspace_entries'), 'error:42501', 'anon may not remove a link');
select is(pg_temp.try_as('a', $$delete from public.workspace_entries
  where workspace_id = '3b000000-0000-4000-8000-0000000000a1' and entry_id = 990001$$), 'ok:1',
  'a member removes a link of their workspace');
select is(pg_temp.try_as('admin', $$delete from public.workspaces where id = '3b000000-0000-4000-8000-0000000000b1'$$),
  'ok:1', 'an admin deletes any workspace');
select is((select count(*) from public.workspace_entries where workspace_id = '3b000000-0000-4000-8000-0000000000b1'),
  0::bigint, 'deleting a workspace deletes its links');

-- anon holds no privilege on these tables at all.
select is(pg_temp.try_as('anon', $$update public.workspaces set name = name$$), 'error:42501',
  'anon may not change a workspace');
select is(pg_temp.try_as('anon', $$insert into public.workspace_tabs (workspace_id, title) values ('3b000000-0000-4000-8000-0000000000a1', 'pgtap anon')$$), 'error:42501',
  'anon may not add a tab');
select is(pg_temp.try_as('anon', $$delete from public.workspace_tabs$$), 'error:42501',
  'anon may not delete a tab');
select is(pg_temp.try_as('anon', $$update public.workspace_entries set note = 'x'$$), 'error:42501',
  'anon may not annotate a link');

select * from finish();
rollback;
