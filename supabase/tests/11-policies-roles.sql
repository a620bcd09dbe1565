-- pgTAP: the policies of roles, role_capabilities and user_roles (users section; no escalation).
begin;
create extension if not exists pgtap with schema extensions;
select plan(59);

\ir helpers/actors.psql

-- c manages users without being an admin; tagger and stats are roles to hand out.
insert into public.roles (slug, name) values
  ('pgtap_tagger', 'Tags editor'), ('pgtap_stats', 'Stats reader'), ('pgtap_manager', 'Manager');
insert into public.role_capabilities (role_id, section, action)
select r.id, c.section, c.action
from public.roles r join (values
  ('pgtap_tagger', 'tags', 'edit'), ('pgtap_stats', 'stats', 'view'),
  ('pgtap_manager', 'users', 'view'), ('pgtap_manager', 'users', 'edit'),
  ('pgtap_manager', 'tags', 'view'), ('pgtap_manager', 'tags', 'edit')
) as c (slug, section, action) on c.slug = r.slug;
do $$ begin
  perform pg_temp.add_user('c', 'pgtap_manager');
end $$;
create function pg_temp.role_id(slug text) returns uuid language sql stable
as $$ select r.id from public.roles r where r.slug = role_id.slug $$;

select ok((select bool_and(relrowsecurity) from pg_class
           where oid in ('public.roles'::regclass, 'public.role_capabilities'::regclass,
                         'public.user_roles'::regclass)),
  'roles, role_capabilities and user_roles have row level security enabled');

-- roles
select policies_are('public', 'roles',
  array['roles_select', 'roles_insert', 'roles_update', 'roles_delete'],
  'roles has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.roles where slug like 'pgtap%'$$), 'ok:4',
  'an admin sees every role');
select is(pg_temp.try_as('c', $$select * from public.roles where slug like 'pgtap%'$$), 'ok:4',
  'a user with users:view sees every role');
select is(pg_temp.try_as('a', $$select * from public.roles where slug like 'pgtap%'$$), 'ok:0',
  'a member without users:view sees no role');
select is(pg_temp.try_as('none', $$select * from public.roles$$), 'ok:0',
  'a user without a role sees no role');
select is(pg_temp.try_as('anon', $$select * from public.roles$$), 'error:42501',
  'anon may not read roles');
select is(pg_temp.try_as('admin', $$insert into public.roles (slug, name) values ('pgtap_new', 'New')$$),
  'ok:1', 'an admin creates a role');
select is(pg_temp.try_as('c', $$insert into public.roles (slug, name) values ('pgtap_c', 'C')$$),
  'error:42501', 'a non-admin with users:edit may not create a role');
select is(pg_temp.try_as('a', $$insert into public.roles (slug, name) values ('pgtap_a', 'A')$$),
  'error:42501', 'a member may not create a role');
select is(pg_temp.try_as('anon', $$insert into public.roles (slug, name) values ('pgtap_x', 'X')$$),
  'error:42501', 'anon may not create a role');
select is(pg_temp.try_as('admin', $$update public.roles set description = 'changed' where slug = 'pgtap_tagger'$$),
  'ok:1', 'an admin changes a role');
select is(pg_temp.try_as('c', $$update public.roles set is_admin = true where slug = 'pgtap_manager'$$),
  'ok:0', 'a non-admin with users:edit changes no role, not even their own');
select is(pg_temp.try_as('a', $$update public.roles set is_admin = true where slug = 'member'$$),
  'error:42501', 'a member may not change a role');
select is(pg_temp.try_as('c', $$delete from public.roles where slug = 'pgtap_new'$$), 'ok:0',
  'a non-admin with users:edit deletes no role');
select is(pg_temp.try_as('a', $$delete from public.roles where slug = 'pgtap_new'$$), 'error:42501',
  'a member may not delete a role');
select is(pg_temp.try_as('anon', $$delete from public.roles where slug = 'pgtap_new'$$), 'error:42501',
  'anon may not delete a role');
select is(pg_temp.try_as('admin', $$delete from public.roles where slug = 'pgtap_new'$$), 'ok:1',
  'an admin deletes a role');

-- role_capabilities
select policies_are('public', 'role_capabilities',
  array['role_capabilities_select', 'role_capabilities_insert', 'role_capabilities_update',
        'role_capabilities_delete'],
  'role_capabilities has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', format('select * from public.role_capabilities where role_id = %L',
  pg_temp.role_id('pgtap_manager'))), 'ok:4', 'an admin sees the capabilities of a role');
select is(pg_temp.try_as('c', format('select * from public.role_capabilities where role_id = %L',
  pg_temp.role_id('pgtap_manager'))), 'ok:4', 'a user with users:view sees the capabilities of a role');
select is(pg_temp.try_as('a', 'select * from public.role_capabilities'), 'ok:0',
  'a member without users:view sees no capability rows');
select is(pg_temp.try_as('anon', 'select * from public.role_capabilities'), 'error:42501',
  'anon may not read role_capabilities');
select is(pg_temp.try_as('c', format($$insert into public.role_capabilities values (%L, 'devices', 'edit')$$,
  pg_temp.role_id('pgtap_manager'))), 'error:42501',
  'a non-admin with users:edit may not add a capability to their own role');
select is(pg_temp.try_as('a', format($$insert into public.role_capabilities values (%L, 'users', 'edit')$$,
  pg_temp.role_id('member'))), 'error:42501', 'a member may not add a capability');
select is(pg_temp.try_as('admin', format($$insert into public.role_capabilities values (%L, 'tags', 'view')$$,
  pg_temp.role_id('pgtap_tagger'))), 'ok:1', 'an admin adds a capability to a role');
select is(pg_temp.try_as('c', format($$update public.role_capabilities set section = 'status' where role_id = %L$$,
  pg_temp.role_id('pgtap_stats'))), 'ok:0', 'a non-admin with users:edit changes no capability');
select is(pg_temp.try_as('a', format($$update public.role_capabilities set section = 'status' where role_id = %L$$,
  pg_temp.role_id('pgtap_stats'))), 'error:42501', 'a member may not change a capability');
select is(pg_temp.try_as('admin', format($$update public.role_capabilities set section = 'status' where role_id = %L$$,
  pg_temp.role_id('pgtap_stats'))), 'ok:1', 'an admin changes a capability');
select is(pg_temp.try_as('c', format('delete from public.role_capabilities where role_id = %L',
  pg_temp.role_id('pgtap_stats'))), 'ok:0', 'a non-admin with users:edit deletes no capability');
select is(pg_temp.try_as('a', format('delete from public.role_capabilities where role_id = %L',
  pg_temp.role_id('pgtap_stats'))), 'error:42501', 'a member may not delete a capability');
select is(pg_temp.try_as('admin', format('delete from public.role_capabilities where role_id = %L',
  pg_temp.role_id('pgtap_stats'))), 'ok:1', 'an admin deletes a capability');

-- user_roles
select policies_are('public', 'user_roles',
  array['user_roles_select', 'user_roles_insert', 'user_roles_update', 'user_roles_delete'],
  'user_roles has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('a', format('select * from public.user_roles where user_id in (%L, %L)',
  pg_temp.uid('a'), pg_temp.uid('b'))), 'ok:1', 'a member sees only their own role assignments');
select is(pg_temp.try_as('c', format('select * from public.user_roles where user_id in (%L, %L)',
  pg_temp.uid('a'), pg_temp.uid('b'))), 'ok:2', 'a user with users:view sees every assignment');
select is(pg_temp.try_as('admin', format('select * from public.user_roles where user_id in (%L, %L)',
  pg_temp.uid('a'), pg_temp.uid('b'))), 'ok:2', 'an admin sees every assignment');
select is(pg_temp.try_as('viewer', format('select * from public.user_roles where user_id in (%L, %L)',
  pg_temp.uid('a'), pg_temp.uid('b'))), 'ok:0', 'a viewer sees no other user''s assignment');
select is(pg_temp.try_as('anon', 'select * from public.user_roles'), 'error:42501',
  'anon may not read user_roles');
select is(pg_temp.try_as('c', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('none'), pg_temp.role_id('pgtap_tagger'))), 'ok:1',
  'a user manager grants a role whose capabilities they hold');
select is(pg_temp.try_as('c', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('none'), pg_temp.role_id('admin'))), 'error:42501',
  'a non-admin user manager may not grant the admin role');
select is(pg_temp.try_as('c', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('none'), pg_temp.role_id('member'))), 'error:42501',
  'a non-admin user manager may not grant a role with capabilities they lack');
select is(pg_temp.try_as('a', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('a'), pg_temp.role_id('admin'))), 'error:42501', 'a member may not grant themselves admin');
select is(pg_temp.try_as('anon', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('none'), pg_temp.role_id('pgtap_tagger'))), 'error:42501', 'anon may not grant a role');
select is(pg_temp.try_as('c', format('update public.user_roles set role_id = %L where user_id = %L',
  pg_temp.role_id('member'), pg_temp.uid('none'))), 'error:42501',
  'a user manager may not switch an assignment to a role they could not grant');
select is(pg_temp.try_as('c', format('update public.user_roles set granted_at = now() where user_id = %L',
  pg_temp.uid('a'))), 'ok:0', 'a user manager changes no assignment of a role they could not grant');
select is(pg_temp.try_as('c', format('update public.user_roles set granted_at = now() where user_id = %L',
  pg_temp.uid('none'))), 'ok:1', 'a user manager changes an assignment of a grantable role');
select is(pg_temp.try_as('a', format('update public.user_roles set granted_at = now() where user_id = %L',
  pg_temp.uid('a'))), 'error:42501', 'a member may not change their own assignment');
select is(pg_temp.try_as('admin', format('update public.user_roles set granted_at = now() where user_id = %L',
  pg_temp.uid('a'))), 'ok:1', 'an admin changes any assignment');
select is(pg_temp.try_as('c', format('delete from public.user_roles where user_id = %L', pg_temp.uid('a'))),
  'ok:0', 'a user manager revokes no role they could not grant');
select is(pg_temp.try_as('a', format('delete from public.user_roles where user_id = %L', pg_temp.uid('a'))),
  'error:42501', 'a member may not revoke their own role');
select is(pg_temp.try_as('anon', format('delete from public.user_roles where user_id = %L', pg_temp.uid('a'))),
  'error:42501', 'anon may not revoke a role');
select is(pg_temp.try_as('c', format('delete from public.user_roles where user_id = %L', pg_temp.uid('none'))),
  'ok:1', 'a user manager revokes a role they could grant');
select is(pg_temp.try_as('admin', format('delete from public.user_roles where user_id = %L', pg_temp.uid('b'))),
  'ok:1', 'an admin revokes any role');
select is(pg_temp.try_as('admin', format('insert into public.user_roles (user_id, role_id) values (%L, %L)',
  pg_temp.uid('b'), pg_temp.role_id('admin'))), 'ok:1', 'an admin grants the admin role');

-- anon holds no privilege on these tables at all.
select is(pg_temp.try_as('anon', $$update public.roles set name = name$$), 'error:42501',
  'anon may not change a role');
select is(pg_temp.try_as('anon', $$insert into public.role_capabilities (role_id, section, action) select id, 'tags', 'view' from public.roles$$), 'error:42501',
  'anon may not add a capability');
select is(pg_temp.try_as('anon', $$update public.role_capabilities set action = action$$), 'error:42501',
  'anon may not change a capability');
select is(pg_temp.try_as('anon', $$delete from public.role_capabilities$$), 'error:42501',
  'anon may not delete a capability');
select is(pg_temp.try_as('anon', $$update public.user_roles set granted_at = now()$$), 'error:42501',
  'anon may not change an assignment');

select * from finish();
rollback;
