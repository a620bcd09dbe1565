-- pgTAP: the federation broker's schema (000 §2.2, §4.5, §5): RLS on every table, the admin RPCs
-- (federation:edit + admin role + confirm), the value-blind HMAC secret, the service-role-only
-- broker RPCs (codes single-use and 60 s, jti single use, rate limits) and the role clamp.
begin;
create extension if not exists pgtap with schema extensions;
select plan(87);

\ir helpers/actors.psql

-- b additionally holds federation:edit without being an admin.
insert into public.roles (slug, name) values ('pgtap_federation', 'federation editor');
insert into public.role_capabilities (role_id, section, action)
select id, 'federation', 'edit' from public.roles where slug = 'pgtap_federation';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_federation';

-- Tables: RLS everywhere, one select policy on the public table, nothing on the private ones.
select ok((select bool_and(c.relrowsecurity) from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where (n.nspname, c.relname) in (('public', 'federation_clients'),
             ('private', 'federation_client_secrets'), ('private', 'federation_sealing_key'),
             ('private', 'federation_codes'), ('private', 'federation_jtis'),
             ('private', 'federation_rate_counters'), ('private', 'federation_identities'))),
  'every federation table has RLS enabled');
select policies_are('public', 'federation_clients', array['federation_clients_select'],
  'federation_clients has only a select policy');
select ok(exists (select 1 from private.federation_sealing_key), 'the seed set the development sealing key');

-- upsert_federation_client: who may call it.
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_pgtap', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'ok:1', 'an admin with federation:edit onboards a client');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_noconfirm', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example')$$),
  'error:22023', 'without confirm => true the upsert is refused');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_noconfirm', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => false)$$),
  'error:22023', 'confirm => false is refused');
select is(pg_temp.try_as('b', $$select public.upsert_federation_client(client_id => 'svc_b', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:42501', 'federation:edit without an admin role is refused');
select is(pg_temp.try_as('a', $$select public.upsert_federation_client(client_id => 'svc_a', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:42501', 'a member is refused');
select is(pg_temp.try_as('viewer', $$select public.upsert_federation_client(client_id => 'svc_v', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:42501', 'a viewer is refused');
select is(pg_temp.try_as('none', $$select public.upsert_federation_client(client_id => 'svc_n', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:42501', 'a user without a role is refused');
select is(pg_temp.try_as('anon', $$select public.upsert_federation_client(client_id => 'svc_x', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:42501', 'anon cannot call it');
select is(pg_temp.try_as('service', $$select public.upsert_federation_client(client_id => 'svc_service', client_name => 'P', verify_mode => 'hosted_jwt', capped_role => 'member', jwks_url => 'https://p.example/jwks.json', issuer => 'https://p.example', audience => 'broker', confirm => true)$$),
  'ok:1', 'the service role onboards a client');

-- upsert_federation_client: what it accepts.
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'Svc-Bad', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:23514', 'client_id must match ^svc_[a-z0-9_]+$');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_adminrole', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'admin', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:22023', 'capped_role cannot be an admin role');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_norole', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'nosuchrole', backend_base_url => 'https://partner.example', confirm => true)$$),
  'error:22023', 'capped_role must exist');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_nourl', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', confirm => true)$$),
  'error:23514', 'backend_bearer needs backend_base_url');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_nojwks', client_name => 'P', verify_mode => 'hosted_jwt', capped_role => 'member', confirm => true)$$),
  'error:23514', 'hosted_jwt needs jwks_url, issuer and audience');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_pgtap', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', mint_hmac_secret => true, confirm => true)$$),
  'error:22023', 'verify_mode is set once');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_pgtap', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', mint_hmac_secret => true, confirm => true)$$),
  'error:22023', 'mint_hmac_secret applies to hmac clients only');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_nosecret', client_name => 'P', verify_mode => 'hmac', capped_role => 'member', confirm => true)$$),
  'error:22023', 'an hmac client is created with a minted secret');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_pgtap', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example', start_limit_per_minute => 0, confirm => true)$$),
  'error:23514', 'rate-limit thresholds must be positive');

-- Partner URLs name public https hosts (reference A7 item 16); loopback only for local stand-ins.
select is(pg_temp.try_as('admin', format($$select public.upsert_federation_client(client_id => 'svc_ssrf', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => %L, confirm => true)$$, url)),
  'error:22023', 'backend_base_url ' || url || ' is refused')
from unnest(array['http://partner.example', 'https://169.254.169.254/latest', 'https://10.0.0.1',
  'https://[fd00::1]', 'https://[::ffff:a9fe:a9fe]', 'https://metadata.google.internal',
  'https://2130706433', 'https://0xa9.0xfe.0xa9.0xfe']) as url;
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_ssrf', client_name => 'P', verify_mode => 'hosted_jwt', capped_role => 'member', jwks_url => 'https://192.168.1.1/jwks.json', issuer => 'i', audience => 'a', confirm => true)$$),
  'error:22023', 'a jwks_url on a private network is refused');
select is(pg_temp.try_as('admin', $$select public.upsert_federation_client(client_id => 'svc_ssrf', client_name => 'P', verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'http://127.0.0.1:4000/partner', confirm => true)$$),
  'ok:1', 'a loopback stand-in is accepted (the broker refuses it on hosted projects)');

-- The HMAC secret: returned once, stored sealed, readable nowhere. Direct calls act as the
-- service role (which holds every capability).
select set_config('request.jwt.claims', '{"role":"service_role"}', true);
create temp table minted as
select public.upsert_federation_client(client_id => 'svc_hmac_pgtap', client_name => 'H', verify_mode => 'hmac',
  capped_role => 'member', mint_hmac_secret => true, confirm => true) as answer;
select matches((select answer ->> 'hmac_secret' from minted), '^[A-Za-z0-9_-]{43}$',
  'minting returns a 256-bit base64url secret once');
select is((select count(*)::int from private.federation_client_secrets s, minted
           where position(convert_to(minted.answer ->> 'hmac_secret', 'UTF8') in s.sealed_secret) > 0),
  0, 'the stored copy is sealed, not the secret');
select ok((select (s.sealed_secret is not null) from private.federation_client_secrets s where s.client_id = 'svc_hmac_pgtap'),
  'a sealed copy is stored');
select is((select count(*)::int from public.list_federation_clients(confirm => true) j, minted
           where j::text like '%' || (minted.answer ->> 'hmac_secret') || '%'), 0,
  'list_federation_clients never shows the secret');
select is((select count(*)::int from public.federation_clients c, minted
           where to_jsonb(c)::text like '%' || (minted.answer ->> 'hmac_secret') || '%'), 0,
  'the federation_clients row never holds the secret');
select ok((public.upsert_federation_client(client_id => 'svc_hmac_pgtap', client_name => 'H2', verify_mode => 'hmac',
  capped_role => 'member', confirm => true)) ->> 'hmac_secret' is null, 'an update without mint returns no secret');
savepoint no_key;
delete from private.federation_sealing_key;
select throws_ok($$select public.upsert_federation_client(client_id => 'svc_nokey', client_name => 'H', verify_mode => 'hmac', capped_role => 'member', mint_hmac_secret => true, confirm => true)$$,
  '55000', null, 'without a sealing key nothing is minted');
rollback to savepoint no_key;

-- Reading the table and the private tables.
select is(pg_temp.try_as('admin', 'select * from public.federation_clients'),
  'ok:' || (select count(*) from public.federation_clients), 'an admin reads the client records');
select is(pg_temp.try_as('b', 'select * from public.federation_clients'), 'ok:0', 'a non-admin federation editor reads none');
select is(pg_temp.try_as('a', 'select * from public.federation_clients'), 'ok:0', 'a member reads none');
select is(pg_temp.try_as('anon', 'select * from public.federation_clients'), 'error:42501', 'anon cannot read them');
select is(pg_temp.try_as('admin', $$update public.federation_clients set enabled = false$$), 'error:42501',
  'not even an admin writes the table directly');
select is(pg_temp.try_as('admin', $$delete from public.federation_clients$$), 'error:42501', 'nor deletes from it');
select is(pg_temp.try_as('admin', 'select * from private.federation_client_secrets'), 'error:42501', 'no API role reads sealed secrets');
select is(pg_temp.try_as('service', 'select * from private.federation_client_secrets'), 'error:42501', 'not even the service role');
select is(pg_temp.try_as('service', 'select * from private.federation_codes'), 'error:42501', 'codes are private');
select is(pg_temp.try_as('service', 'select * from private.federation_identities'), 'error:42501', 'identities are private');

-- list and delete.
select is(pg_temp.try_as('admin', 'select * from public.list_federation_clients(confirm => true)'),
  'ok:' || (select count(*) from public.federation_clients), 'an admin lists the clients');
select is(pg_temp.try_as('admin', 'select * from public.list_federation_clients()'), 'error:22023',
  'an admin lists only with confirm => true');
select is(pg_temp.try_as('b', 'select * from public.list_federation_clients(confirm => true)'), 'error:42501', 'a non-admin cannot list');
select is(pg_temp.try_as('a', 'select * from public.list_federation_clients(confirm => true)'), 'error:42501', 'a member cannot list');
select is(pg_temp.try_as('admin', $$select public.delete_federation_client('svc_service')$$), 'error:22023', 'delete needs confirm');
select is(pg_temp.try_as('b', $$select public.delete_federation_client('svc_service', true)$$), 'error:42501', 'a non-admin cannot delete');
select is(pg_temp.value_as('admin', $$select public.delete_federation_client('svc_service', true)$$), 'true', 'an admin deletes with confirm');
select is(pg_temp.value_as('admin', $$select public.delete_federation_client('svc_service', true)$$), 'false', 'deleting again reports nothing deleted');

-- Broker RPCs: service role only.
select is(pg_temp.try_as('admin', $$select public.federation_broker_begin_start('svc_pgtap', '1.2.3.4')$$), 'error:42501', 'users cannot begin a start');
select is(pg_temp.try_as('anon', $$select public.federation_broker_consume_code('00', 'x', '1.2.3.4')$$), 'error:42501', 'anon cannot consume codes');
select is(pg_temp.value_as('service', $$select public.federation_broker_begin_start('svc_pgtap', '1.2.3.4') ->> 'status'$$), 'ok', 'the broker begins a start');
select is(pg_temp.value_as('service', $$select public.federation_broker_begin_start('svc_nobody', '1.2.3.4') ->> 'status'$$), 'unknown_client', 'an unknown client is reported as such');

-- Codes: challenge-bound, single use, 60 s.
select is(public.federation_broker_issue_code('svc_pgtap', repeat('ab', 32), 'challenge-1', 'sub-1', 'P@x.com', 'p@x.com', at => '2030-01-01 00:00:00+00'),
  'issued', 'a code is issued');
select is(public.federation_broker_consume_code(repeat('ab', 32), 'wrong', '1.2.3.4', '2030-01-01 00:00:10+00') ->> 'status',
  'mismatch', 'a wrong challenge is a mismatch');
select is(public.federation_broker_consume_code(repeat('ab', 32), 'challenge-1', '1.2.3.4', '2030-01-01 00:00:59+00') ->> 'status',
  'consumed', 'the right challenge within 60 s consumes the code');
select is(public.federation_broker_consume_code(repeat('ab', 32), 'challenge-1', '1.2.3.4', '2030-01-01 00:00:59+00') ->> 'status',
  'gone', 'a consumed code is gone');
select is(public.federation_broker_issue_code('svc_pgtap', repeat('cd', 32), 'challenge-2', 'sub-2', at => '2030-01-01 00:00:00+00'),
  'issued', 'a second code is issued');
select is(public.federation_broker_consume_code(repeat('cd', 32), 'challenge-2', '1.2.3.4', '2030-01-01 00:01:01+00') ->> 'status',
  'gone', 'a code is gone at 61 s');
select is(public.federation_broker_issue_code('svc_hmac_pgtap', repeat('ef', 32), 'c', 's', jti => 'jti-1'), 'issued', 'a jti is accepted once');
select is(public.federation_broker_issue_code('svc_hmac_pgtap', repeat('01', 32), 'c', 's', jti => 'jti-1'), 'replayed', 'and replayed afterwards');

-- A disabled client is an unknown one (000 §2.2): not even its own limits tell them apart, and
-- the codes it issued stop working (kill switch).
select set_config('request.jwt.claims', '{"role":"service_role"}', true);
do $$ begin perform public.upsert_federation_client(client_id => 'svc_off', client_name => 'O',
  verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example',
  ip_limit_per_minute => 1, start_limit_per_minute => 1, confirm => true); end $$;
select is(public.federation_broker_issue_code('svc_off', repeat('0f', 32), 'challenge-off', 'sub-off', at => '2030-01-01 00:00:00+00'),
  'issued', 'a code is issued while the client is enabled');
do $$ begin perform public.upsert_federation_client(client_id => 'svc_off', client_name => 'O',
  verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example',
  ip_limit_per_minute => 1, start_limit_per_minute => 1, enabled => false, confirm => true); end $$;
select is((select array_agg(public.federation_broker_begin_start('svc_off', '9.9.9.9', '2030-01-01 00:00:00+00') ->> 'status') from generate_series(1, 3)),
  array['unknown_client', 'unknown_client', 'unknown_client'], 'a disabled client is counted like an unknown one, not by its own limits');
select is(public.federation_broker_consume_code(repeat('0f', 32), 'challenge-off', '1.2.3.4', '2030-01-01 00:00:10+00') ->> 'status',
  'gone', 'a disabled client''s outstanding code is gone');

-- Rule 3 for the life of a link: an account linked as a non-admin is unlinked once it is an admin.
update auth.users set email_confirmed_at = now() where id = pg_temp.uid('viewer');
do $$ begin perform public.federation_broker_bind_identity('svc_pgtap', 'sub-linked', pg_temp.uid('viewer'), false); end $$;
select is(public.federation_broker_issue_code('svc_pgtap', repeat('1f', 32), 'challenge-l1', 'sub-linked', at => '2030-01-01 00:00:00+00'),
  'issued', 'a code for the linked partner user is issued');
select is(public.federation_broker_consume_code(repeat('1f', 32), 'challenge-l1', '1.2.3.4', '2030-01-01 00:00:10+00') -> 'mapped' ->> 'user_id',
  pg_temp.uid('viewer')::text, 'while it is no admin, the linked account is used');
insert into public.user_roles (user_id, role_id) select pg_temp.uid('viewer'), id from public.roles where slug = 'admin';
do $$ begin perform public.federation_broker_issue_code('svc_pgtap', repeat('2f', 32), 'challenge-l2', 'sub-linked', at => '2030-01-01 00:00:00+00'); end $$;
select is(public.federation_broker_consume_code(repeat('2f', 32), 'challenge-l2', '1.2.3.4', '2030-01-01 00:00:10+00') -> 'mapped',
  'null'::jsonb, 'once it is an admin, the partner user no longer maps to it');
select ok(not exists (select 1 from private.federation_identities where partner_sub = 'sub-linked'),
  'and the link is gone');

-- Rate limits: a window counts up to its threshold, then refuses.
select is((select array_agg(private.federation_hit('pgtap-bucket', 2, '2030-01-01 00:00:00+00')) from generate_series(1, 3)),
  array[true, true, false], 'the third hit in a window of 2 is refused');

-- Role clamp: a provisioned account holds only its capped role, whoever grants more.
select is(public.federation_broker_bind_identity('svc_pgtap', 'sub-a', pg_temp.uid('a'), true) ->> 'user_id',
  pg_temp.uid('a')::text, 'an identity is bound');
select throws_ok($$insert into public.user_roles (user_id, role_id) select pg_temp.uid('a'), id from public.roles where slug = 'admin'$$,
  '42501', null, 'a provisioned account cannot be granted the admin role');


-- Second review. One address past its own IP limit no longer uses up the client's budget.
do $$ begin perform public.upsert_federation_client(client_id => 'svc_dos', client_name => 'D',
  verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example',
  ip_limit_per_minute => 2, start_limit_per_minute => 5, confirm => true); end $$;
select is((select array_agg(public.federation_broker_begin_start('svc_dos', '6.6.6.6', '2030-01-01 00:00:00+00') ->> 'status') from generate_series(1, 10)),
  array['ok', 'ok'] || array_fill('rate_limited'::text, array[8]), 'one address is held to its IP limit');
select is(public.federation_broker_begin_start('svc_dos', '7.7.7.7', '2030-01-01 00:00:00+00') ->> 'status',
  'ok', 'and its refused requests do not use up the client''s budget for other addresses');

-- Lowering a client's capped_role re-clamps the accounts it provisioned at once.
insert into public.roles (slug, name) values ('pgtap_capped', 'capped lower');
do $$ begin perform public.upsert_federation_client(client_id => 'svc_pgtap', client_name => 'P',
  verify_mode => 'backend_bearer', capped_role => 'pgtap_capped', backend_base_url => 'https://partner.example',
  confirm => true); end $$;
select is((select array_agg(r.slug) from public.user_roles ur join public.roles r on r.id = ur.role_id
           where ur.user_id = pg_temp.uid('a')), array['pgtap_capped'],
  'an account the client provisioned holds the new capped role at once');
select is((select count(*)::int from public.user_roles ur join public.roles r on r.id = ur.role_id
           where ur.user_id = pg_temp.uid('b') and r.slug = 'member'), 1,
  'accounts the client did not provision are untouched');

-- A capped role cannot become an admin role afterwards.
select throws_ok($$update public.roles set is_admin = true where slug = 'pgtap_capped'$$,
  '23514', null, 'a capped_role cannot be turned into an admin role');

-- Links are checked again when they are made (the facts were read earlier, without a lock).
update auth.users set email_confirmed_at = now() where id = pg_temp.uid('b');
do $$ begin perform public.upsert_federation_client(client_id => 'svc_trusted', client_name => 'T',
  verify_mode => 'backend_bearer', capped_role => 'member', backend_base_url => 'https://partner.example',
  email_linking_trusted => true, confirm => true); end $$;
select is(public.federation_broker_bind_identity('svc_trusted', 'sub-x', pg_temp.uid('b'), false) ->> 'user_id',
  pg_temp.uid('b')::text, 'a linkable account is linked');
select is(public.federation_broker_bind_identity('svc_pgtap', 'sub-y', pg_temp.uid('b'), false) ->> 'refused',
  'true', 'a second partner cannot link an account that is already federated');
select is(public.federation_broker_bind_identity('svc_trusted', 'sub-z', pg_temp.uid('a'), false) ->> 'refused',
  'true', 'nor link an account another partner provisioned');

select col_default_is('public', 'federation_clients', 'emails_verified_by_partner', 'false',
  'a client is trusted to verify e-mails only when onboarded so (reference A)');
select * from finish();
rollback;
