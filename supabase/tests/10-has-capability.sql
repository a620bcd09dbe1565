-- pgTAP: has_capability(section, action), private.is_admin(), private.role_is_grantable() and the
-- default role every new auth user receives.
begin;
create extension if not exists pgtap with schema extensions;
select plan(36);

\ir helpers/actors.psql

-- Extra roles: edit without view, a second role to union with, a non-admin user manager.
insert into public.roles (slug, name) values
  ('pgtap_tagger', 'Tags editor'), ('pgtap_stats', 'Stats reader'), ('pgtap_manager', 'Manager'),
  ('pgtap_empty', 'No capability');
insert into public.role_capabilities (role_id, section, action)
select r.id, c.section, c.action
from public.roles r join (values
  ('pgtap_tagger', 'tags', 'edit'),
  ('pgtap_stats', 'stats', 'view'), ('pgtap_stats', 'users', 'view'),
  ('pgtap_manager', 'users', 'view'), ('pgtap_manager', 'users', 'edit'),
  ('pgtap_manager', 'tags', 'view'), ('pgtap_manager', 'tags', 'edit')
) as c (slug, section, action) on c.slug = r.slug;
do $$ begin
  perform pg_temp.add_user('c', 'pgtap_manager');
end $$;

-- Every capability the caller holds, sorted, as section:action.
create function pg_temp.held(who text) returns text language sql
as $$ select pg_temp.value_as(who, $q$
  select coalesce(string_agg(s || ':' || a, ',' order by s, a), '')
  from unnest(array['devices', 'entries', 'federation', 'services', 'settings', 'stats', 'status',
                    'tags', 'users']) as s,
       unnest(array['edit', 'view']) as a
  where public.has_capability(s, a)$q$) $$;
create function pg_temp.role_id(slug text) returns uuid language sql stable
as $$ select r.id from public.roles r where r.slug = role_id.slug $$;

-- has_capability per role.
select is(pg_temp.held('admin'),
  'devices:edit,devices:view,entries:edit,entries:view,federation:edit,federation:view,'
  'services:edit,services:view,settings:edit,settings:view,stats:edit,stats:view,status:edit,'
  'status:view,tags:edit,tags:view,users:edit,users:view',
  'an admin holds every capability of every section');
select is(pg_temp.held('a'),
  'devices:edit,devices:view,entries:edit,entries:view,services:edit,services:view,'
  'settings:edit,settings:view,tags:edit,tags:view',
  'a member holds view and edit of devices, entries, settings, services and tags only');
select is(pg_temp.value_as('a', $$select public.has_capability('users', 'view')$$), 'false',
  'a member may not view users');
select is(pg_temp.value_as('a', $$select public.has_capability('stats', 'view')$$), 'false',
  'a member may not view stats');
select is(pg_temp.value_as('a', $$select public.has_capability('status', 'view')$$), 'false',
  'a member may not view status');
select is(pg_temp.value_as('a', $$select public.has_capability('federation', 'edit')$$), 'false',
  'a member may not edit federation');
select is(pg_temp.held('viewer'),
  'devices:view,entries:view,services:view,settings:view,tags:view',
  'a viewer holds view capabilities and no edit capability');
select is(pg_temp.value_as('viewer', $$select public.has_capability('devices', 'edit')$$), 'false',
  'a viewer may not edit devices');
select is(pg_temp.held('none'), '', 'a user without a role holds no capability');
select is(pg_temp.value_as('none', $$select public.has_capability('devices', 'view')$$), 'false',
  'a user without a role may not view devices');
select is(pg_temp.held('service'),
  'devices:edit,devices:view,entries:edit,entries:view,federation:edit,federation:view,'
  'services:edit,services:view,settings:edit,settings:view,stats:edit,stats:view,status:edit,'
  'status:view,tags:edit,tags:view,users:edit,users:view',
  'the service role holds every capability');

-- Edit implies view; several roles add up.
update public.user_roles set role_id = pg_temp.role_id('pgtap_tagger')
where user_id = pg_temp.uid('b');
select is(pg_temp.held('b'), 'tags:edit,tags:view', 'a role holding only tags:edit also grants tags:view');
insert into public.user_roles (user_id, role_id) values (pg_temp.uid('b'), pg_temp.role_id('pgtap_stats'));
select is(pg_temp.held('b'), 'stats:view,tags:edit,tags:view,users:view',
  'a user with two roles holds the union of their capabilities');
select is(pg_temp.value_as('b', $$select public.has_capability('stats', 'edit')$$), 'false',
  'view does not imply edit');

-- Callers that are not signed-in users.
select is(pg_temp.value_claims('{"role":"authenticated"}',
  $$select public.has_capability('devices', 'view')$$), 'false',
  'an authenticated request without sub holds no capability');
select is(pg_temp.value_as('anon', $$select public.has_capability('devices', 'view')$$),
  'error:42501', 'anon may not execute has_capability');
do $$ begin perform set_config('request.jwt.claims', '{"role":"anon"}', true); end $$;
select is(public.has_capability('devices', 'view'), false, 'anon claims hold no capability');
do $$ begin perform set_config('request.jwt.claims', '', true); end $$;
select is(public.has_capability('devices', 'view'), false, 'a call without claims holds no capability');

-- private.is_admin.
select is(pg_temp.value_as('admin', 'select private.is_admin()'), 'true', 'is_admin is true for an admin');
select is(pg_temp.value_as('a', 'select private.is_admin()'), 'false', 'is_admin is false for a member');
select is(pg_temp.value_as('c', 'select private.is_admin()'), 'false',
  'is_admin is false for a non-admin holding users:edit');
select is(pg_temp.value_as('none', 'select private.is_admin()'), 'false',
  'is_admin is false for a user without a role');
select is(pg_temp.value_as('service', 'select private.is_admin()'), 'true',
  'is_admin is true for the service role');
select is(pg_temp.value_as('anon', 'select private.is_admin()'), 'error:42501',
  'anon may not execute is_admin');

-- private.role_is_grantable: no escalation beyond the caller's own capabilities.
select is(pg_temp.value_as('c', format('select private.role_is_grantable(%L)', pg_temp.role_id('pgtap_tagger'))),
  'true', 'a manager may grant a role whose capabilities they hold');
select is(pg_temp.value_as('c', format('select private.role_is_grantable(%L)', pg_temp.role_id('pgtap_manager'))),
  'true', 'a manager may grant their own role');
select is(pg_temp.value_as('c', format('select private.role_is_grantable(%L)', pg_temp.role_id('admin'))),
  'false', 'a non-admin may not grant the admin role');
select is(pg_temp.value_as('c', format('select private.role_is_grantable(%L)', pg_temp.role_id('member'))),
  'false', 'a non-admin may not grant a role with capabilities they lack');
select is(pg_temp.value_as('c', format('select private.role_is_grantable(%L)', pg_temp.role_id('pgtap_stats'))),
  'false', 'a non-admin may not grant a role holding one capability they lack');
select is(pg_temp.value_as('admin', format('select private.role_is_grantable(%L)', pg_temp.role_id('admin'))),
  'true', 'an admin may grant the admin role');
select is(pg_temp.value_as('anon', format('select private.role_is_grantable(%L)', pg_temp.role_id('pgtap_empty'))),
  'error:42501', 'anon may not execute role_is_grantable');

-- The default role of new auth users.
insert into auth.users (instance_id, id, aud, role, email) values
  ('00000000-0000-0000-0000-000000000000', 'ad000000-0000-4000-8000-000000000101', 'authenticated',
   'authenticated', 'new1@pgtap.test');
select is(
  array(select r.slug from public.user_roles ur join public.roles r on r.id = ur.role_id
        where ur.user_id = 'ad000000-0000-4000-8000-000000000101'),
  array['member'], 'a new auth user receives the default role member');
select is(
  (select granted_by from public.user_roles where user_id = 'ad000000-0000-4000-8000-000000000101'),
  null, 'the default role is granted by nobody');
select is(pg_temp.value_claims('{"sub":"ad000000-0000-4000-8000-000000000101","role":"authenticated"}',
  $$select public.has_capability('devices', 'edit')$$), 'true',
  'a new auth user may edit devices through the default role');
select throws_ok($$update public.roles set is_default = true where slug = 'admin'$$, '23505', null,
  'at most one role is the default');
update public.roles set is_default = false where slug = 'member';
insert into auth.users (instance_id, id, aud, role, email) values
  ('00000000-0000-0000-0000-000000000000', 'ad000000-0000-4000-8000-000000000102', 'authenticated',
   'authenticated', 'new2@pgtap.test');
select is(
  (select count(*) from public.user_roles where user_id = 'ad000000-0000-4000-8000-000000000102'),
  0::bigint, 'without a default role a new auth user receives no role');

select * from finish();
rollback;
