-- pgTAP: the Approvals page's private Realtime topic (docs/realtime.md "Private channels",
-- "Broadcast from the database"; docs/farm.md "Gating"). A policy on realtime.messages lets a
-- person with farm:edit read the broadcasts of `approvals:<their id>` only, never another
-- user's topic, presence, or a write; a trigger broadcasts every insert, update and delete of
-- public.farm_pending_actions to its owner's topic, whoever made the change.
begin;
create extension if not exists pgtap with schema extensions;
select plan(25);

\ir helpers/actors.psql

-- b holds farm:edit through a role of its own; a is a member without the farm.
insert into public.roles (slug, name) values ('pgtap_farmer', 'pgTAP farmer');
insert into public.role_capabilities (role_id, section, action)
select id, 'farm', 'edit' from public.roles where slug = 'pgtap_farmer';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_farmer';

-- Realtime's join check (docs/realtime.md "Private channels"): a row of the topic and extension
-- is inserted, realtime.topic is set to the channel, and the joining user selects it.
create function pg_temp.read_topic(who text, topic text, extension text) returns text
language plpgsql
as $$
declare
  probe uuid := gen_random_uuid();
  outcome text;
begin
  insert into realtime.messages (id, topic, extension, payload, event, private)
  values (probe, topic, extension, '{}', 'probe', true);
  perform set_config('realtime.topic', topic, true);
  outcome := pg_temp.try_as(who, format('select 1 from realtime.messages where id = %L', probe));
  perform set_config('realtime.topic', '', true);
  return outcome;
end
$$;
-- Realtime's write check: the joining user inserts a row of the topic.
create function pg_temp.write_topic(who text, topic text) returns text language plpgsql
as $$
declare
  outcome text;
begin
  perform set_config('realtime.topic', topic, true);
  outcome := pg_temp.try_as(who, format(
    $q$insert into realtime.messages (topic, extension, payload, event, private)
       values (%L, 'broadcast', '{}', 'probe', true)$q$, topic));
  perform set_config('realtime.topic', '', true);
  return outcome;
end
$$;

-- The policy, acting user by acting user.
select is(pg_temp.read_topic('b', 'approvals:' || pg_temp.uid('b'), 'broadcast'), 'ok:1',
  'the owner with farm:edit reads the broadcasts of their approvals topic');
select is(pg_temp.read_topic('admin', 'approvals:' || pg_temp.uid('admin'), 'broadcast'), 'ok:1',
  'an admin reads the broadcasts of their own approvals topic');
select is(pg_temp.read_topic('b', 'approvals:' || pg_temp.uid('admin'), 'broadcast'), 'ok:0',
  'a user with farm:edit may not read another user''s approvals topic');
select is(pg_temp.read_topic('admin', 'approvals:' || pg_temp.uid('b'), 'broadcast'), 'ok:0',
  'not even an admin reads another user''s approvals topic');
select is(pg_temp.read_topic('a', 'approvals:' || pg_temp.uid('a'), 'broadcast'), 'ok:0',
  'a user without farm:edit may not read their own approvals topic');
select is(pg_temp.read_topic('viewer', 'approvals:' || pg_temp.uid('viewer'), 'broadcast'),
  'ok:0', 'a viewer may not read their own approvals topic');
select is(pg_temp.read_topic('b', 'approvals:' || pg_temp.uid('b'), 'presence'), 'ok:0',
  'the owner may not use presence on their approvals topic');
select is(pg_temp.read_topic('b', 'approvals:' || pg_temp.uid('b') || 'x', 'broadcast'), 'ok:0',
  'a topic that only starts with the owner''s is not theirs');
select is(pg_temp.read_topic('b', 'approvals', 'broadcast'), 'ok:0',
  'the bare approvals topic is nobody''s');
select is(pg_temp.read_topic('anon', 'approvals:', 'broadcast'), 'ok:0',
  'anon reads no approvals topic');
select is(pg_temp.write_topic('b', 'approvals:' || pg_temp.uid('b')), 'error:42501',
  'the owner may not write to their approvals topic (the database alone does)');
select is(pg_temp.write_topic('admin', 'approvals:' || pg_temp.uid('admin')), 'error:42501',
  'an admin may not write to their approvals topic either');

-- The trigger: every change of b's action reaches approvals:<b>, as broadcast_changes sends it.
insert into public.api_tokens (jti, user_id, label, client_id, expires_at) values
  ('pgtap-oauth-b', pg_temp.uid('b'), 'oauth', 'pgtap-agent', now() + interval '1 hour');
create function pg_temp.broadcasts(operation text) returns setof realtime.messages
language sql
as $$
  select * from realtime.messages
   where topic = 'approvals:' || pg_temp.uid('b') and event = operation
     and payload -> 'record' ->> 'id' is not distinct from
         case when operation = 'DELETE' then null else 'fa590000-0000-4000-8000-000000000001' end
     and (operation = 'INSERT'
          or payload -> 'old_record' ->> 'id' = 'fa590000-0000-4000-8000-000000000001')
$$;

-- As the tool server writes it.
insert into public.farm_pending_actions
  (id, owner_user_id, tool, would_run, arguments_sha256, client_id, client_name, token_jti,
   expires_at)
values
  ('fa590000-0000-4000-8000-000000000001', pg_temp.uid('b'), 'farm_run_shell', 'echo b',
   extensions.digest('b', 'sha256'), 'pgtap-agent', 'Agent', 'pgtap-oauth-b',
   now() + interval '5 minutes');
select is((select count(*) from pg_temp.broadcasts('INSERT')), 1::bigint,
  'an insert writes one broadcast to approvals:<owner>');
select is((select extension || ' ' || private::text from pg_temp.broadcasts('INSERT')),
  'broadcast true', 'the broadcast is on the private channel of the topic');
select is((select payload - 'id' - 'record' from pg_temp.broadcasts('INSERT')),
  jsonb_build_object('operation', 'INSERT', 'table', 'farm_pending_actions', 'schema', 'public',
                     'old_record', null),
  'it carries the operation, table and schema as realtime.broadcast_changes sends them');
select is((select payload -> 'record' ->> 'would_run' from pg_temp.broadcasts('INSERT')), 'echo b',
  'its record is the new row');
select is((select count(*) from realtime.messages
            where payload -> 'record' ->> 'id' = 'fa590000-0000-4000-8000-000000000001'
              and topic <> 'approvals:' || pg_temp.uid('b')), 0::bigint,
  'no other topic receives the owner''s action');

-- As the owner decides it from a dashboard session (an API role, which may not insert into
-- realtime.messages itself).
select is(pg_temp.try_claims(pg_temp.session_claims('b'), $$update public.farm_pending_actions
  set decision = 'approved' where id = 'fa590000-0000-4000-8000-000000000001'$$), 'ok:1',
  'the owner approves the action from a dashboard session');
select is((select count(*) from pg_temp.broadcasts('UPDATE')), 1::bigint,
  'the owner''s update writes one broadcast to approvals:<owner>');
select is((select (payload -> 'old_record' ->> 'decision') is null
                  and payload -> 'record' ->> 'decision' = 'approved'
                  and payload -> 'record' ->> 'decided_via' = 'dashboard'
             from pg_temp.broadcasts('UPDATE')), true,
  'the update carries the old and the new (stamped) row');

-- As the sweep removes it.
delete from public.farm_pending_actions where id = 'fa590000-0000-4000-8000-000000000001';
select is((select count(*) from pg_temp.broadcasts('DELETE')), 1::bigint,
  'a delete writes one broadcast to approvals:<owner>, with the old row only');

-- The function and the publication.
select is((select prosecdef and proconfig = array['search_path=""']
             from pg_proc where oid = 'private.broadcast_farm_pending_action_change()'::regprocedure),
  true, 'the trigger function is security definer with an empty search_path');
select ok(not has_function_privilege('authenticated',
    'private.broadcast_farm_pending_action_change()', 'execute'),
  'no API role may call the trigger function');
select ok(not exists (select 1 from pg_publication_tables where pubname = 'supabase_realtime'
                      and schemaname = 'public' and tablename = 'farm_pending_actions'),
  'farm_pending_actions is no longer published for postgres_changes');
select is((select count(*) from pg_policy
            where polrelid = 'realtime.messages'::regclass and polcmd <> 'r'
              and polname like '%approvals%'), 0::bigint,
  'no policy lets anyone write to an approvals topic');

select * from finish();
rollback;
