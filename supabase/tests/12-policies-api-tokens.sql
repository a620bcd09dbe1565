-- pgTAP: api_tokens policies and privileges, final revocation, and the PostgREST pre-request hook
-- private.refuse_revoked_token().
begin;
create extension if not exists pgtap with schema extensions;
select plan(37);

\ir helpers/actors.psql

-- c holds users:view and users:edit without being an admin.
insert into public.roles (slug, name) values ('pgtap_manager', 'Manager');
insert into public.role_capabilities (role_id, section, action)
select r.id, 'users', a from public.roles r, unnest(array['view', 'edit']) as a
where r.slug = 'pgtap_manager';
do $$ begin
  perform pg_temp.add_user('c', 'pgtap_manager');
end $$;
insert into public.api_tokens (jti, user_id, label, expires_at, revoked_at) values
  ('pgtap-a-live', pg_temp.uid('a'), 'cli', now() + interval '1 day', null),
  ('pgtap-a-revoked', pg_temp.uid('a'), 'oauth', now() + interval '1 day', now()),
  ('pgtap-b-live', pg_temp.uid('b'), 'cli', now() + interval '1 day', null),
  ('pgtap-c-live', pg_temp.uid('c'), 'cli', now() + interval '1 day', null),
  ('pgtap-none-live', pg_temp.uid('none'), 'cli', now() + interval '1 day', null);

select ok((select relrowsecurity from pg_class where oid = 'public.api_tokens'::regclass),
  'api_tokens has row level security enabled');
select policies_are('public', 'api_tokens', array['api_tokens_select', 'api_tokens_update'],
  'api_tokens has exactly a select and an update policy');

-- Reading
select is(pg_temp.try_as('admin', $$select * from public.api_tokens where jti like 'pgtap-%'$$), 'ok:5',
  'an admin sees every token');
select is(pg_temp.try_as('a', $$select * from public.api_tokens where jti like 'pgtap-%'$$), 'ok:2',
  'a user sees only their own tokens');
select is(pg_temp.try_as('b', $$select * from public.api_tokens where jti like 'pgtap-%'$$), 'ok:1',
  'another user sees only their own token');
select is(pg_temp.try_as('none', $$select * from public.api_tokens where jti like 'pgtap-%'$$), 'ok:1',
  'a user without a role still sees their own token');
select is(pg_temp.try_as('c', $$select * from public.api_tokens where jti like 'pgtap-%'$$), 'ok:1',
  'users:view without admin shows no other user''s token');
select is(pg_temp.try_as('anon', 'select * from public.api_tokens'), 'error:42501',
  'anon may not read tokens');

-- Minting is the issuer's (service role) only.
select is(pg_temp.try_as('a', format($$insert into public.api_tokens (jti, user_id, label, expires_at)
  values ('pgtap-a-new', %L, 'cli', now() + interval '1 day')$$, pg_temp.uid('a'))), 'error:42501',
  'a user may not mint a token for themselves');
select is(pg_temp.try_as('admin', format($$insert into public.api_tokens (jti, user_id, label, expires_at)
  values ('pgtap-admin-new', %L, 'cli', now() + interval '1 day')$$, pg_temp.uid('admin'))), 'error:42501',
  'an admin may not mint a token over the API');
select is(pg_temp.try_as('service', format($$insert into public.api_tokens (jti, user_id, label, expires_at)
  values ('pgtap-service-new', %L, 'oauth', now() + interval '1 day')$$, pg_temp.uid('a'))), 'ok:1',
  'the service role mints a token');

-- Revoking
select is(pg_temp.try_as('a', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-a-live'$$),
  'ok:1', 'a user revokes their own token');
select is((select revoked from public.api_tokens where jti = 'pgtap-a-live'), true,
  'a revoked token reads as revoked');
select is(pg_temp.try_as('a', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-b-live'$$),
  'ok:0', 'a user revokes no token of another user');
select is(pg_temp.try_as('c', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-b-live'$$),
  'ok:0', 'users:edit without admin revokes no token of another user');
select is(pg_temp.try_as('none', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-none-live'$$),
  'ok:1', 'a user without a role revokes their own token');
select is(pg_temp.try_as('a', $$update public.api_tokens set label = 'renamed' where jti = 'pgtap-a-revoked'$$),
  'error:42501', 'a user may change no column but revoked_at');
select is(pg_temp.try_as('a', $$update public.api_tokens set revoked_at = null where jti = 'pgtap-a-revoked'$$),
  'error:23514', 'a user may not un-revoke their token');
select is(pg_temp.try_as('a',
  $$update public.api_tokens set revoked_at = revoked_at + interval '1 hour' where jti = 'pgtap-a-revoked'$$),
  'error:23514', 'a revocation time may not be moved');
select is(pg_temp.try_as('a', $$update public.api_tokens set revoked_at = revoked_at where jti = 'pgtap-a-revoked'$$),
  'ok:1', 'rewriting the same revocation time is harmless');
select is(pg_temp.try_as('service', $$update public.api_tokens set revoked_at = null where jti = 'pgtap-a-revoked'$$),
  'error:23514', 'not even the service role un-revokes a token');
select is(pg_temp.try_as('anon', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-b-live'$$),
  'error:42501', 'anon may not revoke a token');
select is(pg_temp.try_as('admin', $$update public.api_tokens set revoked_at = now() where jti = 'pgtap-b-live'$$),
  'ok:1', 'an admin revokes another user''s token');
select is(pg_temp.try_as('a', $$delete from public.api_tokens where jti = 'pgtap-a-live'$$), 'error:42501',
  'a user may not delete a token');
select is(pg_temp.try_as('admin', $$delete from public.api_tokens where jti = 'pgtap-a-live'$$), 'error:42501',
  'an admin may not delete a token over the API');

-- private.refuse_revoked_token, PostgREST's db-pre-request hook.
select ok(exists (
    select 1 from pg_db_role_setting s, unnest(s.setconfig) as setting
    where s.setrole = 'authenticator'::regrole
      and setting = 'pgrst.db_pre_request=private.refuse_revoked_token'),
  'PostgREST runs refuse_revoked_token before every request');
select is(pg_temp.try_claims('{"role":"anon","jti":"pgtap-a-revoked"}', 'select private.refuse_revoked_token()'),
  'error:PGRST', 'an anonymous request carrying a revoked jti is refused');
select is(pg_temp.try_claims(pg_temp.claims('a') || '{"jti":"pgtap-a-revoked"}',
  'select private.refuse_revoked_token()'), 'error:PGRST', 'a user request carrying a revoked jti is refused');
select is(pg_temp.try_claims(pg_temp.claims('c') || '{"jti":"pgtap-c-live"}',
  'select private.refuse_revoked_token()'), 'ok:1', 'a request carrying an unrevoked jti passes');
select is(pg_temp.try_claims(pg_temp.claims('c') || '{"jti":"pgtap-unknown-jti"}',
  'select private.refuse_revoked_token()'), 'ok:1', 'a request carrying an unknown jti passes');
select is(pg_temp.try_as('a', 'select private.refuse_revoked_token()'), 'ok:1',
  'a request without jti passes');
select is(pg_temp.try_as('anon', 'select private.refuse_revoked_token()'), 'ok:1',
  'an anonymous request without jti passes');
do $$ begin perform set_config('request.jwt.claims', '', true); end $$;
select lives_ok('select private.refuse_revoked_token()', 'a request without any claims passes');

-- What PostgREST turns the refusal into: 401 PGRST301 with a WWW-Authenticate challenge.
create function pg_temp.refusal(claims text) returns jsonb language plpgsql
as $$
declare
  msg text;
  detail text;
begin
  perform set_config('request.jwt.claims', claims, true);
  perform private.refuse_revoked_token();
  return null;
exception when sqlstate 'PGRST' then
  get stacked diagnostics msg = message_text, detail = pg_exception_detail;
  return jsonb_build_object('message', msg::jsonb, 'detail', detail::jsonb);
end
$$;
select is(pg_temp.refusal('{"jti":"pgtap-a-revoked"}') -> 'message' ->> 'code', 'PGRST301',
  'the refusal carries PostgREST code PGRST301');
select is(pg_temp.refusal('{"jti":"pgtap-a-revoked"}') -> 'detail',
  '{"status":401,"headers":{"WWW-Authenticate":"Bearer error=\"invalid_token\", error_description=\"JWT revoked\""}}'::jsonb,
  'the refusal answers 401 with a Bearer invalid_token challenge');

-- anon holds no privilege on these tables at all.
select is(pg_temp.try_as('anon', $$insert into public.api_tokens (jti, user_id, label, expires_at) values ('pgtap-anon-new', 'ad000000-0000-4000-8000-0000000000aa', 'x', now() + interval '1 day')$$), 'error:42501',
  'anon may not mint a token');
select is(pg_temp.try_as('anon', $$delete from public.api_tokens$$), 'error:42501',
  'anon may not delete a token');

select * from finish();
rollback;
