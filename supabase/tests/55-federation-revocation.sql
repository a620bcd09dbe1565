-- pgTAP: cascade revocation of broker-minted sessions (docs/federation.md "Cascade revocation") —
-- the private session map, the broker's record RPC (and its refusal when the client was withdrawn
-- meanwhile), revoking one partner user's sessions, disabling and deleting a client; and the
-- hmac_binds_challenge flag.
begin;
create extension if not exists pgtap with schema extensions;
select plan(46);

\ir helpers/actors.psql

-- b holds federation:edit without being an admin.
insert into public.roles (slug, name) values ('pgtap_federation', 'federation editor');
insert into public.role_capabilities (role_id, section, action)
select id, 'federation', 'edit' from public.roles where slug = 'pgtap_federation';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_federation';

-- A session as Auth stores it, with one refresh token.
create function pg_temp.add_session(id uuid, who text) returns void language sql
as $$
  insert into auth.sessions (id, user_id, created_at, updated_at) values (id, pg_temp.uid(who), now(), now());
  insert into auth.refresh_tokens (token, user_id, revoked, created_at, updated_at, session_id)
  values ('rt-' || id, pg_temp.uid(who)::text, false, now(), now(), id);
$$;
create function pg_temp.sid(n int) returns uuid language sql immutable
as $$ select ('5e55105e-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid $$;
create function pg_temp.alive(n int) returns boolean language sql
as $$ select exists (select 1 from auth.sessions where id = pg_temp.sid(n)) $$;

-- Direct calls below run as the migration owner with the service role's claims (as the broker).
select set_config('request.jwt.claims', '{"role":"service_role"}', true);
do $$ begin
  perform public.upsert_federation_client(client_id => 'svc_rev_one', client_name => 'One',
    verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://one.example',
    confirm => true);
  perform public.upsert_federation_client(client_id => 'svc_rev_two', client_name => 'Two',
    verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://two.example',
    confirm => true);
  for n in 1..7 loop
    perform pg_temp.add_session(pg_temp.sid(n), case when n in (1, 2, 5, 7) then 'a' else 'viewer' end);
  end loop;
end $$;

-- The map is private: RLS on, no API role reads it, not even the service role.
select ok((select c.relrowsecurity from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'private' and c.relname = 'federation_sessions'), 'the session map has RLS enabled');
select is(pg_temp.try_as('service', 'select * from private.federation_sessions'), 'error:42501',
  'the service role cannot read the session map');
select is(pg_temp.try_as('admin', 'select * from private.federation_sessions'), 'error:42501',
  'nor can an admin');

-- Recording is the broker's (service role) alone.
select is(pg_temp.try_as('admin', format($$select public.federation_broker_record_session('svc_rev_one', 'sub-1', %L, %L)$$, pg_temp.sid(1), pg_temp.uid('a'))),
  'error:42501', 'a user cannot record a session');
select is(pg_temp.try_as('anon', format($$select public.federation_broker_record_session('svc_rev_one', 'sub-1', %L, %L)$$, pg_temp.sid(1), pg_temp.uid('a'))),
  'error:42501', 'anon cannot record a session');
select is(pg_temp.value_as('service', format($$select public.federation_broker_record_session('svc_rev_one', 'sub-1', %L, %L)$$, pg_temp.sid(1), pg_temp.uid('a'))),
  'true', 'the broker records a session minted through an enabled client');
select is(public.federation_broker_record_session('svc_rev_one', 'sub-1', pg_temp.sid(2), pg_temp.uid('a')), true,
  'a second session of the same partner user');
select is(public.federation_broker_record_session('svc_rev_one', 'sub-2', pg_temp.sid(3), pg_temp.uid('viewer')), true,
  'another partner user of the same client');
select is(public.federation_broker_record_session('svc_rev_two', 'sub-1', pg_temp.sid(4), pg_temp.uid('viewer')), true,
  'the same partner sub at another client is another partner user');
-- Session 5 is the account's own (a password sign-in): never recorded.

-- Revoking one partner user: who may.
select is(pg_temp.try_as('b', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1', true)$$),
  'error:42501', 'federation:edit without an admin role cannot revoke');
select is(pg_temp.try_as('a', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1', true)$$),
  'error:42501', 'a member cannot revoke, not even their own partner identity');
select is(pg_temp.try_as('anon', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1', true)$$),
  'error:42501', 'anon cannot revoke');
select is(pg_temp.try_as('admin', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1')$$),
  'error:22023', 'revoking needs confirm => true');
select ok(pg_temp.alive(1) and pg_temp.alive(2), 'refused calls ended nothing');

-- Revoking one partner user: what ends.
select is(pg_temp.value_as('admin', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1', true)$$),
  '2', 'an admin revokes the partner user''s two sessions');
select ok(not pg_temp.alive(1) and not pg_temp.alive(2), 'both sessions are gone');
select is((select count(*)::int from auth.refresh_tokens where session_id in (pg_temp.sid(1), pg_temp.sid(2))), 0,
  'their refresh tokens went with them');
select ok(pg_temp.alive(5), 'the account''s own session (not minted by the broker) lives on');
select ok(pg_temp.alive(3) and pg_temp.alive(4), 'other partner users, here and at other clients, are untouched');
select is(pg_temp.value_as('service', $$select public.revoke_federation_user_sessions('svc_rev_one', 'sub-1', true)$$),
  '0', 'the service role may revoke too; nothing is left to end');

-- Disabling a client ends every session minted through it, at once.
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_rev_one', client_name => 'One', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://one.example', enabled => false, confirm => true)$$),
  'ok:1', 'an admin disables the client');
select ok(not pg_temp.alive(3), 'disabling the client ends its sessions');
select is((select count(*)::int from auth.refresh_tokens where session_id = pg_temp.sid(3)), 0,
  'and their refresh tokens');
select ok(pg_temp.alive(4) and pg_temp.alive(5), 'sessions of other clients and non-federated sessions stay');
select is((select count(*)::int from private.federation_sessions where client_id = 'svc_rev_one'), 0,
  'the map forgets the ended sessions');

-- A session minted while the client was being disabled is ended when the broker records it.
select is(public.federation_broker_record_session('svc_rev_one', 'sub-3', pg_temp.sid(6), pg_temp.uid('viewer')), false,
  'recording under a disabled client is refused');
select ok(not pg_temp.alive(6), 'and the session is ended instead');
select is(public.federation_broker_record_session('svc_nobody', 'sub-3', pg_temp.sid(7), pg_temp.uid('a')), false,
  'recording under an unknown (deleted) client is refused');
select ok(not pg_temp.alive(7), 'and that session is ended too');

-- Re-enabling brings nothing back; deleting a client ends its sessions.
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_rev_one', client_name => 'One', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://one.example', enabled => true, confirm => true)$$),
  'ok:1', 'an admin enables the client again');
select ok(not pg_temp.alive(3), 're-enabling the client does not bring its sessions back');
select is(pg_temp.value_as('admin', $$select public.delete_federation_client('svc_rev_two', true)$$), 'true',
  'an admin deletes the other client');
select ok(not pg_temp.alive(4), 'deleting a client ends its sessions');
select ok(pg_temp.alive(5), 'the non-federated session still lives');

-- The sweep forgets sessions that ended on their own (sign-out, refresh-token reuse).
do $$ begin
  perform pg_temp.add_session(pg_temp.sid(8), 'a');
  perform public.federation_broker_record_session('svc_rev_one', 'sub-4', pg_temp.sid(8), pg_temp.uid('a'));
  delete from auth.sessions where id = pg_temp.sid(8);
  perform private.sweep_federation_state();
end $$;
select is((select count(*)::int from private.federation_sessions where session_id = pg_temp.sid(8)), 0,
  'the sweep drops map rows whose session ended');

-- Every new function runs with an empty search_path.
select is((select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
           where p.proname in ('federation_broker_record_session', 'revoke_federation_user_sessions',
                               'revoke_federation_sessions', 'revoke_sessions_of_withdrawn_client',
                               'upsert_federation_client', 'federation_broker_begin_start')
             and not coalesce('search_path=""' = any (p.proconfig), false)), 0,
  'every revocation and binding function sets search_path = ''''');

-- hmac_binds_challenge.
select col_default_is('public', 'federation_clients', 'hmac_binds_challenge', 'false',
  'clients do not bind the challenge unless onboarded so (000 §2.4 keeps working)');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_bind_bearer', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://p.example', hmac_binds_challenge => true, confirm => true)$$),
  'error:22023', 'hmac_binds_challenge applies to hmac clients only');
select is(pg_temp.value_as('admin', $$select public.upsert_federation_client(client_id => 'svc_bind', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', mint_hmac_secret => true, hmac_binds_challenge => true, confirm => true) ->> 'hmac_binds_challenge'$$),
  'true', 'an admin onboards an hmac client that binds the challenge');
select is(pg_temp.value_as('admin', $$select public.upsert_federation_client(client_id => 'svc_bind', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', mint_hmac_secret => true, hmac_binds_challenge => true, confirm => true) ? 'hmac_secret'$$),
  'true', 'the one-time secret is still returned with the flag');
select is(pg_temp.try_as('b', $$select public.upsert_federation_client(client_id => 'svc_bind', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', hmac_binds_challenge => false, confirm => true)$$),
  'error:42501', 'a non-admin cannot turn the binding off');
select is(public.federation_broker_begin_start('svc_bind', '1.2.3.4') -> 'client' ->> 'hmac_binds_challenge', 'true',
  'the broker reads the flag with the client''s settings');
select is(pg_temp.value_as('admin', $$select (select x from public.list_federation_clients(confirm => true) x where x ->> 'client_id' = 'svc_bind') ->> 'hmac_binds_challenge'$$),
  'true', 'list_federation_clients shows the flag');
select throws_ok($$update public.federation_clients set hmac_binds_challenge = true where client_id = 'svc_rev_one'$$,
  '23514', null, 'the table refuses the flag on a non-hmac client whatever the path');
-- The upsert replaces the whole record (as for every optional field): leaving the flag out turns it off.
select is(pg_temp.value_as('admin', $$select public.upsert_federation_client(client_id => 'svc_bind', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', confirm => true) ->> 'hmac_binds_challenge'$$),
  'false', 'an upsert without the flag sets it back to false');
select is((select count(*)::int from pg_proc where proname = 'upsert_federation_client'), 1,
  'one upsert_federation_client (the old signature is gone)');

select * from finish();
rollback;
