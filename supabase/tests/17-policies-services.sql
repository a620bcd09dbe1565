-- pgTAP: assistant_agents, service_groups and service_group_agents policies (services section;
-- shared agents are read by all and changed by admins; memberships via group ownership).
begin;
create extension if not exists pgtap with schema extensions;
select plan(73);

\ir helpers/actors.psql

-- Agents: s1 shared, a1/a2 of a, b1 of b, v1 of the viewer. Groups: a1/a2 of a, b1 of b, v1 of the
-- viewer, n1 of the role-less user.
insert into public.assistant_agents (id, owner_user_id, slug, label, model) values
  ('a9000000-0000-4000-8000-0000000000c1', null, 'pgtap-shared', 'Shared', 'm'),
  ('a9000000-0000-4000-8000-0000000000a1', pg_temp.uid('a'), 'pgtap-a1', 'A1', 'm'),
  ('a9000000-0000-4000-8000-0000000000a2', pg_temp.uid('a'), 'pgtap-a2', 'A2', 'm'),
  ('a9000000-0000-4000-8000-0000000000b1', pg_temp.uid('b'), 'pgtap-b1', 'B1', 'm'),
  ('a9000000-0000-4000-8000-0000000000e1', pg_temp.uid('viewer'), 'pgtap-v1', 'V1', 'm');
insert into public.service_groups (id, owner_user_id, name, ssl_proxy_domains) values
  ('5a000000-0000-4000-8000-0000000000a1', pg_temp.uid('a'), 'pgtap ga', '{"*.a.example"}'),
  ('5a000000-0000-4000-8000-0000000000a2', pg_temp.uid('a'), 'pgtap ga2', '{}'),
  ('5a000000-0000-4000-8000-0000000000b1', pg_temp.uid('b'), 'pgtap gb', '{"b.example"}'),
  ('5a000000-0000-4000-8000-0000000000e1', pg_temp.uid('viewer'), 'pgtap gv', '{}'),
  ('5a000000-0000-4000-8000-0000000000f1', pg_temp.uid('none'), 'pgtap gn', '{}');
insert into public.service_group_agents (group_id, agent_id, is_primary, position) values
  ('5a000000-0000-4000-8000-0000000000a1', 'a9000000-0000-4000-8000-0000000000a1', true, 0),
  ('5a000000-0000-4000-8000-0000000000a1', 'a9000000-0000-4000-8000-0000000000c1', false, 1),
  ('5a000000-0000-4000-8000-0000000000b1', 'a9000000-0000-4000-8000-0000000000b1', true, 0),
  ('5a000000-0000-4000-8000-0000000000e1', 'a9000000-0000-4000-8000-0000000000e1', true, 0);

select ok((select bool_and(relrowsecurity) from pg_class
           where oid in ('public.assistant_agents'::regclass, 'public.service_groups'::regclass,
                         'public.service_group_agents'::regclass)),
  'assistant_agents, service_groups and service_group_agents have row level security enabled');

-- assistant_agents
select policies_are('public', 'assistant_agents',
  array['assistant_agents_select', 'assistant_agents_insert', 'assistant_agents_update', 'assistant_agents_delete'],
  'assistant_agents has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.assistant_agents where slug like 'pgtap-%'$$), 'ok:5',
  'an admin sees every agent');
select is(pg_temp.try_as('a', $$select * from public.assistant_agents where slug like 'pgtap-%'$$), 'ok:3',
  'a member sees the shared agents and their own');
select is(pg_temp.try_as('viewer', $$select * from public.assistant_agents where slug like 'pgtap-%'$$), 'ok:2',
  'a viewer sees the shared agents and their own');
select is(pg_temp.try_as('none', $$select * from public.assistant_agents where slug like 'pgtap-%'$$), 'ok:0',
  'a user without services:view sees no agent, not even shared ones');
select is(pg_temp.try_as('anon', 'select * from public.assistant_agents'), 'error:42501', 'anon may not read agents');
select is(pg_temp.try_as('a', $$insert into public.assistant_agents (slug, label, model) values ('pgtap-a3', 'A3', 'm')$$),
  'ok:1', 'a member creates an agent of their own');
select is(pg_temp.try_as('a', $$insert into public.assistant_agents (owner_user_id, slug, label, model)
  values (null, 'pgtap-a-shared', 'S', 'm')$$), 'error:42501', 'a member may not create a shared agent');
select is(pg_temp.try_as('a', format($$insert into public.assistant_agents (owner_user_id, slug, label, model)
  values (%L, 'pgtap-a-for-b', 'X', 'm')$$, pg_temp.uid('b'))), 'error:42501',
  'a member may not create an agent for another user');
select is(pg_temp.try_as('viewer', $$insert into public.assistant_agents (slug, label, model) values ('pgtap-v2', 'V2', 'm')$$),
  'error:42501', 'a viewer may not create an agent');
select is(pg_temp.try_as('none', $$insert into public.assistant_agents (slug, label, model) values ('pgtap-n1', 'N1', 'm')$$),
  'error:42501', 'a user without a role may not create an agent');
select is(pg_temp.try_as('anon', $$insert into public.assistant_agents (slug, label, model) values ('pgtap-x', 'X', 'm')$$),
  'error:42501', 'anon may not create an agent');
select is(pg_temp.try_as('admin', $$insert into public.assistant_agents (owner_user_id, slug, label, model)
  values (null, 'pgtap-shared2', 'S2', 'm')$$), 'ok:1', 'an admin creates a shared agent');
select is(pg_temp.try_as('a', $$update public.assistant_agents set enabled = false where slug = 'pgtap-a1'$$), 'ok:1',
  'a member changes their own agent');
select is(pg_temp.try_as('a', $$update public.assistant_agents set enabled = false where slug = 'pgtap-shared'$$), 'ok:0',
  'a member changes no shared agent');
select is(pg_temp.try_as('a', $$update public.assistant_agents set enabled = false where slug = 'pgtap-b1'$$), 'ok:0',
  'a member changes no agent of another user');
select is(pg_temp.try_as('a', $$update public.assistant_agents set owner_user_id = null where slug = 'pgtap-a1'$$),
  'error:42501', 'a member may not turn their agent into a shared one');
select is(pg_temp.try_as('viewer', $$update public.assistant_agents set enabled = false where slug = 'pgtap-v1'$$),
  'error:42501', 'a viewer may not change their agent');
select is(pg_temp.try_as('admin', $$update public.assistant_agents set label = 'Shared!' where slug = 'pgtap-shared'$$),
  'ok:1', 'an admin changes a shared agent');
select is(pg_temp.try_as('a', $$delete from public.assistant_agents where slug in ('pgtap-shared', 'pgtap-b1')$$),
  'ok:0', 'a member deletes neither shared agents nor other users'' agents');
select is(pg_temp.try_as('viewer', $$delete from public.assistant_agents where slug = 'pgtap-v1'$$), 'error:42501',
  'a viewer may not delete their agent');
select is(pg_temp.try_as('anon', 'delete from public.assistant_agents'), 'error:42501', 'anon may not delete agents');
select is(pg_temp.try_as('a', $$delete from public.assistant_agents where slug = 'pgtap-a3'$$), 'ok:1',
  'a member deletes their own agent');
select is(pg_temp.try_as('admin', $$delete from public.assistant_agents where slug = 'pgtap-shared2'$$), 'ok:1',
  'an admin deletes a shared agent');

-- service_groups
select policies_are('public', 'service_groups',
  array['service_groups_select', 'service_groups_insert', 'service_groups_update', 'service_groups_delete'],
  'service_groups has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.service_groups where name like 'pgtap%'$$), 'ok:5',
  'an admin sees every service group');
select is(pg_temp.try_as('a', $$select * from public.service_groups where name like 'pgtap%'$$), 'ok:2',
  'a member sees only their own service groups');
select is(pg_temp.try_as('viewer', $$select * from public.service_groups where name like 'pgtap%'$$), 'ok:1',
  'a viewer sees their own service group');
select is(pg_temp.try_as('none', $$select * from public.service_groups where name like 'pgtap%'$$), 'ok:0',
  'a user without services:view sees no service group');
select is(pg_temp.try_as('anon', 'select * from public.service_groups'), 'error:42501',
  'anon may not read service groups');
select is(pg_temp.try_as('a', $$insert into public.service_groups (name, ssl_proxy_domains)
  values ('pgtap ga3', '{"*.shop.example","api.example.org"}')$$), 'ok:1', 'a member creates a service group');
select is(pg_temp.try_as('a', $$insert into public.service_groups (name, ssl_proxy_domains)
  values ('pgtap bad', '{"*.*.Example.com"}')$$), 'error:23514',
  'a service group refuses domains that are not lower-case host names with one leading wildcard');
select is(pg_temp.try_as('a', format($$insert into public.service_groups (name, owner_user_id) values ('pgtap x', %L)$$,
  pg_temp.uid('b'))), 'error:42501', 'a member may not create a service group for another user');
select is(pg_temp.try_as('viewer', $$insert into public.service_groups (name) values ('pgtap gv2')$$), 'error:42501',
  'a viewer may not create a service group');
select is(pg_temp.try_as('none', $$insert into public.service_groups (name) values ('pgtap gn2')$$), 'error:42501',
  'a user without a role may not create a service group');
select is(pg_temp.try_as('admin', format($$insert into public.service_groups (name, owner_user_id) values ('pgtap gb2', %L)$$,
  pg_temp.uid('b'))), 'ok:1', 'an admin creates a service group for another user');
select is(pg_temp.try_as('a', $$update public.service_groups set ssl_proxy_domains = '{"*.a.example","a.example"}'
  where id = '5a000000-0000-4000-8000-0000000000a1'$$), 'ok:1', 'a member changes their own service group');
select is(pg_temp.try_as('a', $$update public.service_groups set ssl_proxy_domains = '{}'
  where id = '5a000000-0000-4000-8000-0000000000b1'$$), 'ok:0', 'a member changes no service group of another user');
select is(pg_temp.try_as('a', format($$update public.service_groups set owner_user_id = %L
  where id = '5a000000-0000-4000-8000-0000000000a1'$$, pg_temp.uid('b'))), 'error:42501',
  'a member may not hand their service group to another user');
select is(pg_temp.try_as('viewer', $$update public.service_groups set description = 'x'
  where id = '5a000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not change their service group');
select is(pg_temp.try_as('admin', $$update public.service_groups set description = 'x'
  where id = '5a000000-0000-4000-8000-0000000000b1'$$), 'ok:1', 'an admin changes any service group');
select is(pg_temp.try_as('a', $$delete from public.service_groups where id = '5a000000-0000-4000-8000-0000000000b1'$$),
  'ok:0', 'a member deletes no service group of another user');
select is(pg_temp.try_as('viewer', $$delete from public.service_groups where id = '5a000000-0000-4000-8000-0000000000e1'$$),
  'error:42501', 'a viewer may not delete their service group');
select is(pg_temp.try_as('anon', 'delete from public.service_groups'), 'error:42501',
  'anon may not delete service groups');
select is(pg_temp.try_as('admin', $$delete from public.service_groups where id = '5a000000-0000-4000-8000-0000000000f1'$$),
  'ok:1', 'an admin deletes any service group');

-- service_group_agents
select policies_are('public', 'service_group_agents',
  array['service_group_agents_select', 'service_group_agents_insert', 'service_group_agents_update',
        'service_group_agents_delete'],
  'service_group_agents has exactly the select, insert, update and delete policies');
select is(pg_temp.try_as('admin', $$select * from public.service_group_agents where group_id::text like '5a000000%'$$),
  'ok:4', 'an admin sees every membership');
select is(pg_temp.try_as('a', $$select * from public.service_group_agents where group_id::text like '5a000000%'$$),
  'ok:2', 'a member sees the memberships of their own groups only');
select is(pg_temp.try_as('viewer', $$select * from public.service_group_agents where group_id::text like '5a000000%'$$),
  'ok:1', 'a viewer sees the memberships of their own group');
select is(pg_temp.try_as('none', $$select * from public.service_group_agents where group_id::text like '5a000000%'$$),
  'ok:0', 'a user without services:view sees no membership');
select is(pg_temp.try_as('anon', 'select * from public.service_group_agents'), 'error:42501',
  'anon may not read memberships');
select is(pg_temp.try_as('a', $$insert into public.service_group_agents (group_id, agent_id, is_primary)
  values ('5a000000-0000-4000-8000-0000000000a2', 'a9000000-0000-4000-8000-0000000000a2', true)$$), 'ok:1',
  'a member adds their agent to their group');
select is(pg_temp.try_as('a', $$insert into public.service_group_agents (group_id, agent_id)
  values ('5a000000-0000-4000-8000-0000000000a1', 'a9000000-0000-4000-8000-0000000000b1')$$), 'error:42501',
  'a member may not add another user''s private agent to their group');
select is(pg_temp.try_as('a', $$insert into public.service_group_agents (group_id, agent_id)
  values ('5a000000-0000-4000-8000-0000000000b1', 'a9000000-0000-4000-8000-0000000000c1')$$), 'error:42501',
  'a member may not add an agent to another user''s group');
select is(pg_temp.try_as('viewer', $$insert into public.service_group_agents (group_id, agent_id)
  values ('5a000000-0000-4000-8000-0000000000e1', 'a9000000-0000-4000-8000-0000000000c1')$$), 'error:42501',
  'a viewer may not add an agent to their group');
select is(pg_temp.try_as('anon', $$insert into public.service_group_agents (group_id, agent_id)
  values ('5a000000-0000-4000-8000-0000000000e1', 'a9000000-0000-4000-8000-0000000000c1')$$), 'error:42501',
  'anon may not add an agent to a group');
select is(pg_temp.try_as('admin', $$insert into public.service_group_agents (group_id, agent_id, position)
  values ('5a000000-0000-4000-8000-0000000000b1', 'a9000000-0000-4000-8000-0000000000c1', 1)$$), 'ok:1',
  'an admin adds an agent to any group');
select is(pg_temp.try_as('a', $$update public.service_group_agents set position = 5
  where group_id = '5a000000-0000-4000-8000-0000000000a1' and not is_primary$$), 'ok:1',
  'a member reorders the agents of their group');
select is(pg_temp.try_as('a', $$update public.service_group_agents set position = 5
  where group_id = '5a000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member reorders no agent of another user''s group');
select is(pg_temp.try_as('a', $$update public.service_group_agents set group_id = '5a000000-0000-4000-8000-0000000000b1'
  where group_id = '5a000000-0000-4000-8000-0000000000a1' and not is_primary$$), 'error:42501',
  'a member may not move a membership into another user''s group');
select is(pg_temp.try_as('a', $$update public.service_group_agents set agent_id = 'a9000000-0000-4000-8000-0000000000b1'
  where group_id = '5a000000-0000-4000-8000-0000000000a1' and not is_primary$$), 'error:42501',
  'a member may not point a membership at another user''s private agent');
select is(pg_temp.try_as('viewer', $$update public.service_group_agents set position = 5
  where group_id = '5a000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not reorder agents');
select is(pg_temp.try_as('admin', $$update public.service_group_agents set position = 2
  where group_id = '5a000000-0000-4000-8000-0000000000b1' and not is_primary$$), 'ok:1',
  'an admin reorders the agents of any group');
select is(pg_temp.try_as('a', $$delete from public.service_group_agents
  where group_id = '5a000000-0000-4000-8000-0000000000b1'$$), 'ok:0',
  'a member removes no agent from another user''s group');
select is(pg_temp.try_as('viewer', $$delete from public.service_group_agents
  where group_id = '5a000000-0000-4000-8000-0000000000e1'$$), 'error:42501', 'a viewer may not remove an agent');
select is(pg_temp.try_as('a', $$delete from public.service_group_agents
  where group_id = '5a000000-0000-4000-8000-0000000000a1' and not is_primary$$), 'ok:1',
  'a member removes an agent from their group');
select is(pg_temp.try_as('admin', $$delete from public.service_group_agents
  where group_id = '5a000000-0000-4000-8000-0000000000b1' and not is_primary$$), 'ok:1',
  'an admin removes an agent from any group');

-- anon holds no privilege on these tables at all.
select is(pg_temp.try_as('anon', $$update public.assistant_agents set label = label$$), 'error:42501',
  'anon may not change an agent');
select is(pg_temp.try_as('anon', $$insert into public.service_groups (name) values ('pgtap anon')$$), 'error:42501',
  'anon may not create a service group');
select is(pg_temp.try_as('anon', $$update public.service_groups set name = name$$), 'error:42501',
  'anon may not change a service group');
select is(pg_temp.try_as('anon', $$update public.service_group_agents set position = 0$$), 'error:42501',
  'anon may not reorder agents');
select is(pg_temp.try_as('anon', $$delete from public.service_group_agents$$), 'error:42501',
  'anon may not remove an agent from a group');

select * from finish();
rollback;
