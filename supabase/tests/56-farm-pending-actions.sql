-- pgTAP: a person approves a destructive farm call, not the agent that asked (001 §4.1,
-- docs/farm.md "Gating"). is_dashboard_session() tells a live session of the auth service from
-- a token issued to an OAuth client; farm_pending_actions is read by its owner only and decided
-- once, by the owner holding farm:edit, from a dashboard session only: the same owner's OAuth
-- token, first-party token or a session that ended may not; the database stamps the decision;
-- nobody inserts or deletes through the API; the sweep removes only long-expired actions.
begin;
create extension if not exists pgtap with schema extensions;
select plan(41);

\ir helpers/actors.psql

-- b holds farm:edit through a role of its own; a is a member without the farm.
insert into public.roles (slug, name) values ('pgtap_farmer', 'pgTAP farmer');
insert into public.role_capabilities (role_id, section, action)
select id, 'farm', 'edit' from public.roles where slug = 'pgtap_farmer';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_farmer';

-- The tokens a person's account may present: a dashboard session, one the tool server issued
-- (recorded in api_tokens: an MCP client's, or the dashboard's own first-party exchange), one
-- from an OAuth 2.1 server that stamps client_id (Supabase Auth's), and one with no session.
insert into public.api_tokens (jti, user_id, label, client_id, expires_at) values
  ('pgtap-oauth-admin', pg_temp.uid('admin'), 'oauth', 'pgtap-agent', now() + interval '1 hour'),
  ('pgtap-first-party', pg_temp.uid('admin'), 'oauth', 'dashboard', now() + interval '1 hour');
create temporary table pgtap_tokens (name text primary key, claims jsonb not null);
insert into pgtap_tokens values
  ('admin session', pg_temp.session_claims('admin')),
  ('b session', pg_temp.session_claims('b')),
  ('a session', pg_temp.session_claims('a')),
  ('admin oauth', pg_temp.claims('admin')
     || '{"jti": "pgtap-oauth-admin", "client_id": "pgtap-agent"}'),
  ('admin first-party', pg_temp.claims('admin') || '{"jti": "pgtap-first-party"}'),
  ('admin no session', pg_temp.claims('admin'));
insert into pgtap_tokens
select 'admin session with client_id', claims || '{"client_id": "pgtap-agent"}'
  from pgtap_tokens where name = 'admin session';
insert into pgtap_tokens
select 'admin session recorded as api token', claims || '{"jti": "pgtap-oauth-admin"}'
  from pgtap_tokens where name = 'admin session';
insert into pgtap_tokens
select 'admin anonymous session', claims || '{"is_anonymous": true}'
  from pgtap_tokens where name = 'admin session';
insert into pgtap_tokens
select 'admin with b''s session', pg_temp.claims('admin')
         || jsonb_build_object('session_id', claims ->> 'session_id')
  from pgtap_tokens where name = 'b session';
insert into pgtap_tokens values
  ('admin malformed session', pg_temp.claims('admin') || '{"session_id": "not-a-uuid"}');
grant select on pgtap_tokens to authenticated;

create function pg_temp.as_token(token text, stmt text) returns text language sql
as $$ select pg_temp.try_claims((select claims from pgtap_tokens where name = token), stmt) $$;
create function pg_temp.value_as_token(token text, stmt text) returns text language sql
as $$ select pg_temp.value_claims((select claims from pgtap_tokens where name = token), stmt) $$;

-- What counts as a dashboard session.
select is(pg_temp.value_as_token('admin session', 'select private.is_dashboard_session()::text'),
  'true', 'a live session of the auth service is a dashboard session');
select is(pg_temp.value_as_token(token, 'select private.is_dashboard_session()::text'), 'false',
  token || ' is not a dashboard session')
from unnest(array['admin oauth', 'admin first-party', 'admin no session',
                  'admin session with client_id', 'admin session recorded as api token',
                  'admin anonymous session', 'admin with b''s session',
                  'admin malformed session']) as token;
update auth.sessions set not_after = now() - interval '1 second'
 where id = (select (claims ->> 'session_id')::uuid from pgtap_tokens where name = 'a session');
select is(pg_temp.value_as_token('a session', 'select private.is_dashboard_session()::text'),
  'false', 'a session past its not_after is not one any more');
update auth.sessions set not_after = null
 where id = (select (claims ->> 'session_id')::uuid from pgtap_tokens where name = 'a session');

-- Pending actions, as the tool server writes them (bound to the token that asked).
insert into public.farm_pending_actions
  (id, owner_user_id, tool, would_run, arguments_sha256, client_id, client_name, token_jti,
   created_at, expires_at)
values
  ('fa000000-0000-4000-8000-000000000001', pg_temp.uid('admin'), 'farm_run_shell', 'pending',
   extensions.digest('1', 'sha256'), 'pgtap-agent', 'Agent', 'pgtap-oauth-admin', now(),
   now() + interval '5 minutes'),
  ('fa000000-0000-4000-8000-000000000002', pg_temp.uid('admin'), 'farm_run_shell', 'expired',
   extensions.digest('2', 'sha256'), 'pgtap-agent', 'Agent', 'pgtap-oauth-admin',
   now() - interval '10 minutes', now() - interval '1 second'),
  ('fa000000-0000-4000-8000-000000000003', pg_temp.uid('b'), 'farm_run_shell', 'b''s',
   extensions.digest('3', 'sha256'), 'pgtap-agent', 'Agent', 'pgtap-oauth-admin', now(),
   now() + interval '5 minutes'),
  ('fa000000-0000-4000-8000-000000000004', pg_temp.uid('a'), 'farm_run_shell', 'a''s',
   extensions.digest('4', 'sha256'), 'pgtap-agent', 'Agent', 'pgtap-oauth-admin', now(),
   now() + interval '5 minutes');

select ok((select relrowsecurity from pg_class where oid = 'public.farm_pending_actions'::regclass),
  'farm_pending_actions has row level security enabled');

-- Reading: the owner's own rows only, with the farm capability.
select is(pg_temp.as_token('admin session', 'select * from public.farm_pending_actions'), 'ok:2',
  'the owner reads their own actions, and no other user''s, admin as they are');
select is(pg_temp.as_token('admin oauth', 'select * from public.farm_pending_actions'), 'ok:2',
  'any token of the owner reads them (the agent may see what awaits a person)');
select is(pg_temp.as_token('b session', 'select * from public.farm_pending_actions'), 'ok:1',
  'a non-admin holding farm:edit reads their own');
select is(pg_temp.as_token('a session', 'select * from public.farm_pending_actions'), 'ok:0',
  'a member without the farm reads none, not even their own');
select is(pg_temp.try_as('anon', 'select * from public.farm_pending_actions'), 'error:42501',
  'anon cannot read them');

-- Deciding: the owner, from a dashboard session, while pending; nobody else, no other token.
select is(pg_temp.as_token(token, $$update public.farm_pending_actions set decision = 'approved'
    where id = 'fa000000-0000-4000-8000-000000000001'$$), 'error:42501',
  'the owner''s ' || token || ' cannot approve: 42501')
from unnest(array['admin oauth', 'admin first-party', 'admin no session',
                  'admin session with client_id']) as token;
select is(pg_temp.as_token('b session', $$update public.farm_pending_actions
    set decision = 'approved' where id = 'fa000000-0000-4000-8000-000000000001'$$), 'ok:0',
  'another farm user cannot approve it, even from a session');
select is(pg_temp.as_token('a session', $$update public.farm_pending_actions
    set decision = 'approved' where id = 'fa000000-0000-4000-8000-000000000004'$$),
  'error:42501', 'an owner without farm:edit cannot approve their own');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set decision = 'approved', decided_via = 'elicitation'
    where id = 'fa000000-0000-4000-8000-000000000001'$$), 'error:42501',
  'a person cannot claim the decision came from elicitation');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set would_run = 'something else' where id = 'fa000000-0000-4000-8000-000000000001'$$),
  'error:42501', 'a person cannot change what would run');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set used_at = now() where id = 'fa000000-0000-4000-8000-000000000001'$$),
  'error:42501', 'a person cannot mark an action used');
select is((select decision from public.farm_pending_actions
            where id = 'fa000000-0000-4000-8000-000000000001'), null,
  'after every refused attempt the action is still undecided');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set decision = 'approved' where id = 'fa000000-0000-4000-8000-000000000001'$$), 'ok:1',
  'the owner approves it from a dashboard session');
select is((select decided_via from public.farm_pending_actions
            where id = 'fa000000-0000-4000-8000-000000000001'), 'dashboard',
  'the database records the decision as the dashboard''s');
select ok((select decided_at <= now() from public.farm_pending_actions
            where id = 'fa000000-0000-4000-8000-000000000001'),
  'decided_at is the server''s clock');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set decision = 'denied' where id = 'fa000000-0000-4000-8000-000000000001'$$), 'ok:0',
  'a decided action cannot be decided again through the API');
select throws_ok($$update public.farm_pending_actions set decision = 'denied'
    where id = 'fa000000-0000-4000-8000-000000000001'$$, '23514', null,
  'nor by the tool server: a decision never changes');
select is(pg_temp.as_token('admin session', $$update public.farm_pending_actions
    set decision = 'approved' where id = 'fa000000-0000-4000-8000-000000000002'$$), 'ok:0',
  'an expired action cannot be approved');
select is(pg_temp.as_token('b session', $$update public.farm_pending_actions
    set decision = 'denied' where id = 'fa000000-0000-4000-8000-000000000003'$$), 'ok:1',
  'a non-admin farm user denies their own from a session');

-- The tool server records an elicitation answer as such.
update public.farm_pending_actions set decision = 'approved', decided_via = 'elicitation'
 where id = 'fa000000-0000-4000-8000-000000000004';
select is((select decided_via from public.farm_pending_actions
            where id = 'fa000000-0000-4000-8000-000000000004'), 'elicitation',
  'the tool server records a decision made through elicitation');

-- Nobody writes rows through the API.
select is(pg_temp.as_token('admin session', $$insert into public.farm_pending_actions
    (owner_user_id, tool, would_run, arguments_sha256, client_id, client_name, token_jti,
     expires_at, decision, decided_at, decided_via)
    values (auth.uid(), 'farm_run_shell', 'x', extensions.digest('x', 'sha256'), 'c', 'c',
            'pgtap-oauth-admin', now() + interval '5 minutes', 'approved', now(), 'dashboard')$$),
  'error:42501', 'a person cannot insert a pre-approved action');
select is(pg_temp.as_token('admin oauth', $$insert into public.farm_pending_actions
    (owner_user_id, tool, would_run, arguments_sha256, client_id, client_name, token_jti,
     expires_at)
    values (auth.uid(), 'farm_run_shell', 'x', extensions.digest('x', 'sha256'), 'c', 'c',
            'pgtap-oauth-admin', now() + interval '5 minutes')$$),
  'error:42501', 'an agent cannot insert one');
select is(pg_temp.as_token('admin session', 'delete from public.farm_pending_actions'),
  'error:42501', 'nobody deletes them through the API');

-- The sweep: an action expired more than a day ago goes; a fresh or recent one stays.
update public.farm_pending_actions set created_at = now() - interval '3 days',
       expires_at = now() - interval '2 days'
 where id = 'fa000000-0000-4000-8000-000000000003';
select private.sweep_farm_pending_actions();
select set_eq($$select would_run from public.farm_pending_actions$$,
  array['pending', 'expired', 'a''s'],
  'the sweep removes only actions expired over a day ago');
select is(
  (select count(*)::int from cron.job where jobname = 'farm-pending-actions-sweep'
     and command = 'select private.sweep_farm_pending_actions()'), 1,
  'the sweep is scheduled');
select is((select count(*)::int from cron.job where jobname = 'farm-confirmations-sweep'), 0,
  'the sweep of the bearer confirmations it replaces is gone');
select hasnt_table('private', 'farm_confirmations',
  'the bearer confirmations the agent could present itself are gone');

select * from finish();
rollback;
