-- pgTAP: the platform bootstrap gives what hosted Supabase gives before any migration runs.
begin;
create extension if not exists pgtap with schema extensions;
select plan(22);

select has_role('anon');
select has_role('authenticated');
select has_role('service_role');
select has_role('authenticator');
select ok((select rolbypassrls from pg_roles where rolname = 'service_role'), 'service_role bypasses RLS');
select ok(not (select rolbypassrls from pg_roles where rolname = 'authenticated'), 'authenticated does not bypass RLS');
select ok(pg_has_role('authenticator', 'authenticated', 'member'), 'authenticator may switch to authenticated');

select is(
  (select setting from pg_db_role_setting s, unnest(s.setconfig) as setting
   where s.setrole = 'anon'::regrole and setting like 'statement_timeout=%'),
  'statement_timeout=3s', 'anon statement timeout is 3 s');
select is(
  (select setting from pg_db_role_setting s, unnest(s.setconfig) as setting
   where s.setrole = 'authenticated'::regrole and setting like 'statement_timeout=%'),
  'statement_timeout=8s', 'authenticated statement timeout is 8 s');

select has_schema('auth');
select has_schema('extensions');
select has_table('auth', 'users', 'auth.users exists');
select has_column('auth', 'users', 'raw_user_meta_data', 'auth.users keeps GoTrue column names');
select has_table('auth', 'identities', 'auth.identities exists');
select has_table('auth', 'refresh_tokens', 'auth.refresh_tokens exists');
select ok(exists (select from pg_publication where pubname = 'supabase_realtime'), 'publication supabase_realtime exists');

-- auth.uid()/jwt()/role()/email() read the claims PostgREST sets.
select set_config('request.jwt.claims',
  '{"sub":"6f1c3f6e-4a57-4b8f-9a3e-2f0b8f6d9c11","role":"authenticated","email":"a@example.com"}', true);
select is(auth.uid(), '6f1c3f6e-4a57-4b8f-9a3e-2f0b8f6d9c11'::uuid, 'auth.uid() reads sub');
select is(auth.role(), 'authenticated', 'auth.role() reads role');
select is(auth.email(), 'a@example.com', 'auth.email() reads email');
select is(auth.jwt() ->> 'sub', '6f1c3f6e-4a57-4b8f-9a3e-2f0b8f6d9c11', 'auth.jwt() returns the claims');
select set_config('request.jwt.claims', '', true);
select is(auth.uid(), null, 'auth.uid() is null without claims');

-- Default privileges: a table postgres creates in public is reachable by the API roles.
create table public.pgtap_probe (id int primary key);
select ok(has_table_privilege('authenticated', 'public.pgtap_probe', 'select'),
  'authenticated gets select on new public tables (RLS then decides rows)');

select * from finish();
rollback;
