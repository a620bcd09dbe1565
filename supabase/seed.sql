-- Demo data for local runs; `npm start` applies it once, to a new database. Never applied in
-- production. The demo-login lines are what the stack prints after it starts.
-- demo-login: admin@demo.local demo-admin-pass  administrator
-- demo-login: user@demo.local demo-user-pass  scoped user

insert into auth.users (
  instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
  raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
values
  ('00000000-0000-0000-0000-000000000000', 'a0000000-0000-4000-8000-000000000001', 'authenticated',
   'authenticated', 'admin@demo.local', extensions.crypt('demo-admin-pass', extensions.gen_salt('bf', 10)),
   now(), '{"provider":"email","providers":["email"]}', '{"name":"Demo Admin"}', now(), now()),
  ('00000000-0000-0000-0000-000000000000', 'a0000000-0000-4000-8000-000000000002', 'authenticated',
   'authenticated', 'user@demo.local', extensions.crypt('demo-user-pass', extensions.gen_salt('bf', 10)),
   now(), '{"provider":"email","providers":["email"]}', '{"name":"Demo User"}', now(), now())
on conflict (id) do nothing;

insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
select id::text, id, jsonb_build_object('sub', id::text, 'email', email, 'email_verified', true, 'phone_verified', false),
       'email', now(), now(), now()
from auth.users
where id in ('a0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002')
on conflict (provider_id, provider) do nothing;
