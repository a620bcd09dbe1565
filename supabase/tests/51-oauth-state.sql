-- pgTAP: the tool server's OAuth state (001 §2.1, §3) and whoami() (001 §5.4). The private
-- oauth_* tables have RLS on and no API role reads or writes them; revoke_oauth_tokens reaches
-- exactly the tokens of a grant or a family; the sweep removes only what can no longer be used;
-- one live grant per user and client; whoami() answers the caller and refuses anon and revoked.
begin;
create extension if not exists pgtap with schema extensions;
select plan(150);

\ir helpers/actors.psql

create temporary table oauth_tables (name text primary key, a_column text not null);
insert into oauth_tables values
  ('oauth_clients', 'client_id'), ('oauth_authorization_requests', 'id'),
  ('oauth_grants', 'id'), ('oauth_codes', 'code_hash'),
  ('oauth_refresh_tokens', 'token_hash'), ('oauth_access_tokens', 'jti'),
  ('oauth_rate_counters', 'bucket');
grant select on oauth_tables to anon, authenticated, service_role;

-- Tables: exactly these seven, RLS on each, and no policy that would open any of them.
select set_eq(
  $$select c.relname::text from pg_class c
    where c.relnamespace = 'private'::regnamespace and c.relkind in ('r', 'p')
      and c.relname like 'oauth\_%'$$,
  $$select name from oauth_tables$$,
  'the OAuth state is these seven private tables');
select is(
  (select array_agg(c.relname::text order by c.relname) from pg_class c
   where c.relnamespace = 'private'::regnamespace and c.relkind in ('r', 'p')
     and c.relname like 'oauth\_%' and not c.relrowsecurity),
  null, 'every private.oauth_* table has row level security enabled');
select is_empty(
  $$select policyname from pg_policies where schemaname = 'private' and tablename like 'oauth\_%'$$,
  'no policy opens any private.oauth_* table');

-- Each API role tries each operation on each table and is refused by privileges (42501), not
-- merely by RLS: the statements need no other privilege, and the message tells the two apart.
create function pg_temp.oauth_statement(operation text, table_name text, a_column text)
returns text language sql immutable
as $$
  select case operation
    when 'select' then format('select * from private.%I', table_name)
    when 'insert' then format('insert into private.%I default values', table_name)
    when 'update' then format('update private.%I set %I = null', table_name, a_column)
    when 'delete' then format('delete from private.%I', table_name)
    when 'truncate' then format('truncate private.%I', table_name)
  end
$$;
grant execute on function pg_temp.oauth_statement(text, text, text) to anon, authenticated,
  service_role;
create temporary table oauth_operations (operation text primary key);
insert into oauth_operations values ('select'), ('insert'), ('update'), ('delete'), ('truncate');
grant select on oauth_operations to anon, authenticated, service_role;

set local role anon;
select throws_ok(pg_temp.oauth_statement(o.operation, t.name, t.a_column), '42501',
         format('permission denied for table %s', t.name),
         format('anon may not %s private.%s', o.operation, t.name))
from oauth_tables t cross join oauth_operations o order by t.name, o.operation;
reset role;
set local role authenticated;
select throws_ok(pg_temp.oauth_statement(o.operation, t.name, t.a_column), '42501',
         format('permission denied for table %s', t.name),
         format('authenticated may not %s private.%s', o.operation, t.name))
from oauth_tables t cross join oauth_operations o order by t.name, o.operation;
reset role;
set local role service_role;
select throws_ok(pg_temp.oauth_statement(o.operation, t.name, t.a_column), '42501',
         format('permission denied for table %s', t.name),
         format('service_role may not %s private.%s', o.operation, t.name))
from oauth_tables t cross join oauth_operations o order by t.name, o.operation;
reset role;

-- The two maintenance functions are the tool server's (table owner) only.
select is(
  (select array_agg(format('%s %s', r.rolname, f.name) order by 1)
   from (values ('anon'), ('authenticated'), ('service_role')) as r (rolname)
   cross join (values ('private.revoke_oauth_tokens(uuid[], uuid[])'),
                      ('private.sweep_oauth_state()')) as f (name)
   where has_function_privilege(r.rolname, f.name, 'execute')),
  null, 'no API role may execute revoke_oauth_tokens or sweep_oauth_state');

-- Fixtures: two clients; a's grant with two refresh families, b's grant with one; a first-party
-- token and a token of another label that no grant or family names.
insert into private.oauth_clients (client_id, source, token_endpoint_auth_method) values
  ('pgtap-client-1', 'registration', 'none'), ('pgtap-client-2', 'registration', 'none');
insert into private.oauth_grants (id, user_id, client_id, scope, resource) values
  ('9a000000-0000-4000-8000-0000000000a1', pg_temp.uid('a'), 'pgtap-client-1', 'dashboard',
   'http://mcp.test'),
  ('9a000000-0000-4000-8000-0000000000b1', pg_temp.uid('b'), 'pgtap-client-1', 'dashboard',
   'http://mcp.test');
create function pg_temp.hash(secret text) returns text language sql immutable
as $$ select encode(sha256(convert_to(secret, 'UTF8')), 'hex') $$;
insert into private.oauth_refresh_tokens (token_hash, family_id, grant_id, issuer, expires_at) values
  (pg_temp.hash('rt-a1'), 'fa000000-0000-4000-8000-0000000000a1',
   '9a000000-0000-4000-8000-0000000000a1', 'http://mcp.test', now() + interval '30 days'),
  (pg_temp.hash('rt-a2'), 'fa000000-0000-4000-8000-0000000000a2',
   '9a000000-0000-4000-8000-0000000000a1', 'http://mcp.test', now() + interval '30 days'),
  (pg_temp.hash('rt-b1'), 'fa000000-0000-4000-8000-0000000000b1',
   '9a000000-0000-4000-8000-0000000000b1', 'http://mcp.test', now() + interval '30 days');
insert into public.api_tokens (jti, user_id, label, client_id, expires_at) values
  ('pgtap-at-a1', pg_temp.uid('a'), 'oauth', 'pgtap-client-1', now() + interval '1 hour'),
  ('pgtap-at-a2', pg_temp.uid('a'), 'oauth', 'pgtap-client-1', now() + interval '1 hour'),
  ('pgtap-at-b1', pg_temp.uid('b'), 'oauth', 'pgtap-client-1', now() + interval '1 hour'),
  ('pgtap-at-first-party', pg_temp.uid('a'), 'oauth', 'dashboard', now() + interval '1 hour'),
  ('pgtap-at-cli', pg_temp.uid('a'), 'cli', null, now() + interval '1 hour');
insert into private.oauth_access_tokens (jti, grant_id, family_id) values
  ('pgtap-at-a1', '9a000000-0000-4000-8000-0000000000a1', 'fa000000-0000-4000-8000-0000000000a1'),
  ('pgtap-at-a2', '9a000000-0000-4000-8000-0000000000a1', 'fa000000-0000-4000-8000-0000000000a2'),
  ('pgtap-at-b1', '9a000000-0000-4000-8000-0000000000b1', 'fa000000-0000-4000-8000-0000000000b1'),
  ('pgtap-at-first-party', null, null);
create function pg_temp.revoked_tokens() returns text[] language sql
as $$
  select coalesce(array_agg(name order by name), '{}') from (
    select jti as name from public.api_tokens where jti like 'pgtap-at-%' and revoked_at is not null
    union all
    select r.name from private.oauth_refresh_tokens t
    join (values ('rt-a1'), ('rt-a2'), ('rt-b1')) as r (name) on t.token_hash = pg_temp.hash(r.name)
    where t.revoked_at is not null
  ) as revoked
$$;

-- A family: its access and refresh tokens, not its grant's other family.
select is(private.revoke_oauth_tokens('{}', array['fa000000-0000-4000-8000-0000000000a1'::uuid]),
  1, 'revoking a family counts the one access token it issued');
select is(pg_temp.revoked_tokens(), array['pgtap-at-a1', 'rt-a1'],
  'a family revocation reaches its access and refresh token and nothing else');
-- A grant: every family under it, not another user's grant for the same client.
select is(private.revoke_oauth_tokens(array['9a000000-0000-4000-8000-0000000000a1'::uuid], '{}'),
  1, 'revoking the grant counts only the access token still live');
select is(pg_temp.revoked_tokens(), array['pgtap-at-a1', 'pgtap-at-a2', 'rt-a1', 'rt-a2'],
  'a grant revocation reaches every family of the grant and nothing else');
select is(private.revoke_oauth_tokens(array['9a000000-0000-4000-8000-0000000000a1'::uuid],
                                      array['fa000000-0000-4000-8000-0000000000a1'::uuid]),
  0, 'revoking again revokes nothing more');
select is(private.revoke_oauth_tokens(null, null), 0, 'revoking no grant and no family is a no-op');
select is(pg_temp.revoked_tokens(), array['pgtap-at-a1', 'pgtap-at-a2', 'rt-a1', 'rt-a2'],
  'the first-party token, the cli token and the other user''s grant stay live');
select is(private.revoke_oauth_tokens(array['9a000000-0000-4000-8000-0000000000b1'::uuid],
                                      array['fa000000-0000-4000-8000-0000000000b1'::uuid]),
  1, 'a grant and its own family named together count its access token once');
select is(pg_temp.revoked_tokens(),
  array['pgtap-at-a1', 'pgtap-at-a2', 'pgtap-at-b1', 'rt-a1', 'rt-a2', 'rt-b1'],
  'that reaches b''s tokens and still not the first-party or cli token');

-- The sweep: what expired over a day ago goes; live rows and recent ones stay; clients and
-- grants are never swept.
insert into private.oauth_authorization_requests (id, client_id, issuer, redirect_uri,
    code_challenge, scope, resource, created_at, expires_at) values
  (rpad('pgtap-request-old', 40, '0'), 'pgtap-client-2', 'http://mcp.test', 'http://127.0.0.1/cb',
   repeat('A', 43), 'dashboard', 'http://mcp.test', now() - interval '3 days', now() - interval '2 days'),
  (rpad('pgtap-request-recent', 40, '0'), 'pgtap-client-2', 'http://mcp.test', 'http://127.0.0.1/cb',
   repeat('A', 43), 'dashboard', 'http://mcp.test', now() - interval '2 hours', now() - interval '1 hour'),
  (rpad('pgtap-request-live', 40, '0'), 'pgtap-client-2', 'http://mcp.test', 'http://127.0.0.1/cb',
   repeat('A', 43), 'dashboard', 'http://mcp.test', now(), now() + interval '10 minutes');
insert into private.oauth_grants (id, user_id, client_id, scope, resource) values
  ('9a000000-0000-4000-8000-0000000000c2', pg_temp.uid('b'), 'pgtap-client-2', 'dashboard',
   'http://mcp.test');
insert into private.oauth_codes (code_hash, request_id, grant_id, expires_at) values
  (pg_temp.hash('code-old'), rpad('pgtap-request-live', 40, '0'),
   '9a000000-0000-4000-8000-0000000000c2', now() - interval '2 days'),
  (pg_temp.hash('code-live'), rpad('pgtap-request-live', 40, '0'),
   '9a000000-0000-4000-8000-0000000000c2', now() + interval '60 seconds'),
  (pg_temp.hash('code-of-old-request'), rpad('pgtap-request-old', 40, '0'),
   '9a000000-0000-4000-8000-0000000000c2', now() + interval '60 seconds');
insert into private.oauth_refresh_tokens (token_hash, family_id, grant_id, issuer, expires_at) values
  (pg_temp.hash('rt-old'), 'fa000000-0000-4000-8000-0000000000c1',
   '9a000000-0000-4000-8000-0000000000c2', 'http://mcp.test', now() - interval '2 days'),
  (pg_temp.hash('rt-recent'), 'fa000000-0000-4000-8000-0000000000c1',
   '9a000000-0000-4000-8000-0000000000c2', 'http://mcp.test', now() - interval '1 hour'),
  (pg_temp.hash('rt-live'), 'fa000000-0000-4000-8000-0000000000c2',
   '9a000000-0000-4000-8000-0000000000c2', 'http://mcp.test', now() + interval '30 days');
insert into private.oauth_rate_counters (bucket, window_start, hits) values
  ('pgtap:old', now() - interval '2 days', 3), ('pgtap:live', date_trunc('minute', now()), 1);

select lives_ok('select private.sweep_oauth_state()', 'the sweep runs');
select is(
  (select array_agg(left(id, 20) order by id) from private.oauth_authorization_requests
   where id like 'pgtap-request-%'),
  array['pgtap-request-live00', 'pgtap-request-recent'],
  'the sweep deletes requests expired over a day ago and keeps live and recent ones');
select is(
  (select array_agg(c.name order by c.name) from private.oauth_codes o
   join (values ('code-old'), ('code-live'), ('code-of-old-request')) as c (name)
     on o.code_hash = pg_temp.hash(c.name)),
  array['code-live'],
  'the sweep deletes expired codes and the codes of swept requests, and keeps live ones');
select is(
  (select array_agg(r.name order by r.name) from private.oauth_refresh_tokens t
   join (values ('rt-old'), ('rt-recent'), ('rt-live'), ('rt-a1')) as r (name)
     on t.token_hash = pg_temp.hash(r.name)),
  array['rt-a1', 'rt-live', 'rt-recent'],
  'the sweep deletes refresh tokens expired over a day ago and keeps live, recent and revoked ones');
select is(
  (select array_agg(bucket order by bucket) from private.oauth_rate_counters
   where bucket like 'pgtap:%'),
  array['pgtap:live'], 'the sweep deletes rate windows over a day old and keeps the current one');
select is(
  (select count(*)::int from private.oauth_clients where client_id like 'pgtap-client-%'), 2,
  'the sweep keeps every client (registrations never expire)');
select is(
  (select count(*)::int from private.oauth_grants where client_id like 'pgtap-client-%'), 3,
  'the sweep keeps every grant');

-- One live grant per user and client; a revoked one makes room for a new one.
insert into private.oauth_clients (client_id, source, token_endpoint_auth_method)
values ('pgtap-client-3', 'registration', 'none');
select lives_ok($$insert into private.oauth_grants (id, user_id, client_id, scope, resource)
    values ('9a000000-0000-4000-8000-0000000000d1', pg_temp.uid('a'), 'pgtap-client-3',
            'dashboard', 'http://mcp.test')$$,
  'a user gets a live grant for a client');
select throws_ok($$insert into private.oauth_grants (user_id, client_id, scope, resource)
    values (pg_temp.uid('a'), 'pgtap-client-3', 'dashboard', 'http://mcp.test')$$,
  '23505', null, 'a second live grant for the same user and client is refused');
select lives_ok($$insert into private.oauth_grants (user_id, client_id, scope, resource)
    values (pg_temp.uid('b'), 'pgtap-client-3', 'dashboard', 'http://mcp.test')$$,
  'another user gets their own live grant for the same client');
update private.oauth_grants set revoked_at = now() where id = '9a000000-0000-4000-8000-0000000000d1';
select lives_ok($$insert into private.oauth_grants (user_id, client_id, scope, resource)
    values (pg_temp.uid('a'), 'pgtap-client-3', 'dashboard', 'http://mcp.test')$$,
  'after revocation the user gets a new live grant for the client');
select throws_ok($$update private.oauth_grants set revoked_at = null
    where id = '9a000000-0000-4000-8000-0000000000d1'$$,
  '23505', null, 'the revoked grant cannot come back while the new one lives');
select is(
  (select count(*)::int from private.oauth_grants
   where user_id = pg_temp.uid('a') and client_id = 'pgtap-client-3'), 2,
  'the revoked grant stays on record beside the new one');

-- whoami(): the definer's contract, then the answer for each kind of caller.
select ok((select p.prosecdef and p.proconfig = array['search_path=""']
           from pg_proc p where p.oid = 'public.whoami()'::regprocedure),
  'whoami is security definer with an empty search_path');
select is(
  (select array_agg(r order by r)
   from unnest(array['anon', 'authenticated', 'service_role', 'public']) as r
   where case when r = 'public'
              then exists (select 1 from pg_proc p, aclexplode(p.proacl) a
                           where p.oid = 'public.whoami()'::regprocedure and a.grantee = 0)
              else has_function_privilege(r, 'public.whoami()', 'execute') end),
  array['authenticated'], 'only authenticated may execute whoami');

insert into public.roles (slug, name) values ('pgtap_tagger', 'pgTAP tagger');
insert into public.role_capabilities (role_id, section, action)
select id, 'tags', 'edit' from public.roles where slug = 'pgtap_tagger';
do $$ begin
  perform pg_temp.add_user('c', 'pgtap_tagger');
end $$;
create function pg_temp.whoami(claims jsonb) returns jsonb language sql
as $$ select pg_temp.value_claims(claims, 'select public.whoami()::text')::jsonb $$;
create function pg_temp.capabilities(sections text[], actions text[]) returns jsonb
language sql immutable
as $$
  select coalesce(jsonb_agg(s || ':' || a order by si, ai), '[]')
  from unnest(sections) with ordinality as x (s, si)
  cross join unnest(actions) with ordinality as y (a, ai)
$$;

select is(pg_temp.whoami(pg_temp.claims('admin')) - 'capabilities',
  jsonb_build_object('user_id', pg_temp.uid('admin'), 'email', 'admin@pgtap.test',
    'roles', jsonb_build_array(jsonb_build_object('slug', 'admin', 'name', 'Administrator',
                                                  'is_admin', true)),
    'is_admin', true,
    'token', jsonb_build_object('jti', null, 'client_id', null, 'label', null)),
  'whoami answers an admin: id, e-mail, the admin role and is_admin');
select is(pg_temp.whoami(pg_temp.claims('admin')) -> 'capabilities',
  pg_temp.capabilities(
    (select array_agg(m[1]) from regexp_matches(
       (select pg_get_constraintdef(oid) from pg_constraint
        where conname = 'role_capabilities_section_check'), '''([a-z_]+)''', 'g') as m),
    array['view', 'edit']),
  'an admin holds view and edit on every section role_capabilities accepts');
select is(pg_temp.whoami(pg_temp.claims('a')),
  jsonb_build_object('user_id', pg_temp.uid('a'), 'email', 'a@pgtap.test',
    'roles', jsonb_build_array(jsonb_build_object('slug', 'member', 'name', 'Member',
                                                  'is_admin', false)),
    'capabilities', pg_temp.capabilities(array['devices', 'entries', 'settings', 'services', 'tags'],
                                         array['view', 'edit']),
    'is_admin', false,
    'token', jsonb_build_object('jti', null, 'client_id', null, 'label', null)),
  'whoami answers a member: the member role and its ten capabilities');
select is(pg_temp.whoami(pg_temp.claims('viewer')) -> 'capabilities',
  pg_temp.capabilities(array['devices', 'entries', 'settings', 'services', 'tags'], array['view']),
  'a view-only role holds no edit capability');
select is(pg_temp.whoami(pg_temp.claims('c')) -> 'capabilities', '["tags:view", "tags:edit"]',
  'edit implies view');
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('c'), id from public.roles where slug = 'pgtap_viewer';
select is(pg_temp.whoami(pg_temp.claims('c')) -> 'roles',
  jsonb_build_array(
    jsonb_build_object('slug', 'pgtap_tagger', 'name', 'pgTAP tagger', 'is_admin', false),
    jsonb_build_object('slug', 'pgtap_viewer', 'name', 'pgTAP viewer', 'is_admin', false)),
  'several roles are all listed, by name');
select is(pg_temp.whoami(pg_temp.claims('c')) -> 'capabilities',
  '["devices:view", "entries:view", "settings:view", "services:view", "tags:view", "tags:edit"]',
  'capabilities are the union over the roles');
select is(pg_temp.whoami(pg_temp.claims('none')),
  jsonb_build_object('user_id', pg_temp.uid('none'), 'email', 'none@pgtap.test',
    'roles', '[]'::jsonb, 'capabilities', '[]'::jsonb, 'is_admin', false,
    'token', jsonb_build_object('jti', null, 'client_id', null, 'label', null)),
  'whoami answers a user without a role: no roles, no capabilities');

insert into public.api_tokens (jti, user_id, label, client_id, expires_at) values
  ('pgtap-whoami-live', pg_temp.uid('a'), 'oauth', 'pgtap-client-1', now() + interval '1 hour');
select is(
  pg_temp.whoami(pg_temp.claims('a') || '{"jti": "pgtap-whoami-live", "client_id": "claimed"}')
    -> 'token',
  '{"jti": "pgtap-whoami-live", "client_id": "pgtap-client-1", "label": "oauth"}',
  'the token is described as recorded in api_tokens');
select is(
  pg_temp.whoami(pg_temp.claims('b') || '{"jti": "pgtap-whoami-live", "client_id": "claimed"}')
    -> 'token',
  '{"jti": "pgtap-whoami-live", "client_id": "claimed", "label": null}',
  'another user''s api_tokens row is never described');
select is(
  pg_temp.value_claims(pg_temp.claims('a') || '{"jti": "pgtap-at-a1"}', 'select public.whoami()'),
  'error:PGRST', 'a revoked token is refused (the pre-request hook''s 401)');
select is(
  pg_temp.value_claims(
    jsonb_build_object('role', 'authenticated', 'sub', 'ad000000-0000-4000-8000-000000000404'),
    'select public.whoami()'),
  'error:PGRST', 'a token naming no user is refused with 401');
update auth.users set deleted_at = now() where id = pg_temp.uid('b');
select is(pg_temp.value_as('b', 'select public.whoami()'), 'error:PGRST',
  'a soft-deleted user is refused with 401');
select is(pg_temp.value_claims('{"role": "authenticated"}', 'select public.whoami()'),
  'error:PGRST', 'an authenticated token without sub is refused with 401');
select is(pg_temp.value_as('anon', 'select public.whoami()'), 'error:42501',
  'anon may not call whoami (PostgREST: 401)');
select is(pg_temp.value_as('service', 'select public.whoami()'), 'error:42501',
  'the service role is no caller and may not call whoami');

-- What PostgREST turns the refusal of a token naming no user into: 401 with a challenge.
create function pg_temp.refusal(claims jsonb) returns jsonb language plpgsql
as $$
declare
  msg text;
  detail text;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  perform public.whoami();
  return null;
exception when sqlstate 'PGRST' then
  get stacked diagnostics msg = message_text, detail = pg_exception_detail;
  return jsonb_build_object('message', msg::jsonb, 'detail', detail::jsonb);
end
$$;
select is(
  pg_temp.refusal('{"role": "authenticated", "sub": "ad000000-0000-4000-8000-000000000404"}')
    -> 'detail' ->> 'status',
  '401', 'a token naming no user is answered 401');

select * from finish();
rollback;
