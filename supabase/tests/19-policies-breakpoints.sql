-- pgTAP: breakpoint_events policies (entries section, via device ownership) and the held → resumed
-- transition: resume once, only the resume fields change.
begin;
create extension if not exists pgtap with schema extensions;
select plan(37);

-- Fixture users (pg_temp.uid) and how a request runs as one of them: the role and JWT claims
-- PostgREST sets. try_as reports ok:<rows> (a SELECT reports its row count) or error:<SQLSTATE>;
-- value_as reports the first column of the first row, or error:<SQLSTATE>.
create function pg_temp.uid(who text) returns uuid language sql immutable
as $$ select ('ad000000-0000-4000-8000-0000000000' || case who when 'admin' then 'ad'
  when 'a' then 'aa' when 'b' then 'bb' when 'c' then 'cc' when 'viewer' then 'ee'
  when 'none' then 'ff' end)::uuid $$;
create function pg_temp.claims(who text) returns jsonb language sql immutable
as $$ select case who when 'anon' then '{"role":"anon"}'::jsonb
  when 'service' then '{"role":"service_role"}'::jsonb
  else jsonb_build_object('sub', pg_temp.uid(who), 'role', 'authenticated') end $$;
create function pg_temp.try_claims(claims jsonb, stmt text) returns text language plpgsql
as $$
declare
  n bigint;
  outcome text;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  perform set_config('role', claims ->> 'role', true);
  begin
    execute stmt;
    get diagnostics n = row_count;
    outcome := 'ok:' || n;
  exception when others then
    outcome := 'error:' || sqlstate;
  end;
  perform set_config('role', 'none', true);
  perform set_config('request.jwt.claims', '', true);
  return outcome;
end
$$;
create function pg_temp.try_as(who text, stmt text) returns text language sql
as $$ select pg_temp.try_claims(pg_temp.claims(who), stmt) $$;
create function pg_temp.value_claims(claims jsonb, stmt text) returns text language plpgsql
as $$
declare
  outcome text;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  perform set_config('role', claims ->> 'role', true);
  begin
    execute stmt into outcome;
  exception when others then
    outcome := 'error:' || sqlstate;
  end;
  perform set_config('role', 'none', true);
  perform set_config('request.jwt.claims', '', true);
  return outcome;
end
$$;
create function pg_temp.value_as(who text, stmt text) returns text language sql
as $$ select pg_temp.value_claims(pg_temp.claims(who), stmt) $$;
create function pg_temp.add_user(who text, role_slug text) returns void language sql
as $$
  insert into auth.users (instance_id, id, aud, role, email)
  values ('00000000-0000-0000-0000-000000000000', pg_temp.uid(who), 'authenticated',
          'authenticated', who || '@pgtap.test');
  delete from public.user_roles where user_id = pg_temp.uid(who);
  insert into public.user_roles (user_id, role_id)
  select pg_temp.uid(who), r.id from public.roles r where r.slug = role_slug;
$$;
-- admin: the admin role; a and b: members owning separate rows; viewer: view-only; none: no role.
insert into public.roles (slug, name) values ('pgtap_viewer', 'pgTAP viewer');
insert into public.role_capabilities (role_id, section, action)
select r.id, s, 'view' from public.roles r,
  unnest(array['devices', 'entries', 'settings', 'services', 'tags']) as s
where r.slug = 'pgtap_viewer';
do $$ begin
  perform pg_temp.add_user('admin', 'admin');
  perform pg_temp.add_user('a', 'member');
  perform pg_temp.add_user('b', 'member');
  perform pg_temp.add_user('viewer', 'pgtap_viewer');
  perform pg_temp.add_user('none', null);
end $$;

insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
insert into public.breakpoint_events (id, device_uuid, phase, pattern, message, held_at) values
  (990101, 'de000000-0000-4000-8000-0000000000a1', 'request', 'a.example/*', '{"url":"https://a.example/1"}', now() - interval '1 minute'),
  (990102, 'de000000-0000-4000-8000-0000000000a1', 'request', 'a.example/*', '{"url":"https://a.example/2"}', now() - interval '1 minute'),
  (990103, 'de000000-0000-4000-8000-0000000000a1', 'response', 'a.example/*', '{}', now() - interval '1 minute'),
  (990104, 'de000000-0000-4000-8000-0000000000b1', 'request', 'b.example/*', '{}', now() - interval '1 minute'),
  (990105, 'de000000-0000-4000-8000-0000000000e1', 'request', 'v.example/*', '{}', now() - interval '1 minute'),
  (990106, 'de000000-0000-4000-8000-0000000000f1', 'request', 'n.example/*', '{}', now() - interval '1 minute');

select ok((select relrowsecurity from pg_class where oid = 'public.breakpoint_events'::regclass),
  'breakpoint_events has row level security enabled');
select policies_are('public', 'breakpoint_events',
  array['breakpoint_events_select', 'breakpoint_events_insert', 'breakpoint_events_update',
        'breakpoint_events_delete'],
  'breakpoint_events has exactly the select, insert, update and delete policies');

-- Reading
select is(pg_temp.try_as('admin', 'select * from public.breakpoint_events where id between 990101 and 990199'),
  'ok:6', 'an admin sees every breakpoint event');
select is(pg_temp.try_as('a', 'select * from public.breakpoint_events where id between 990101 and 990199'),
  'ok:3', 'a member sees the events of their own devices only');
select is(pg_temp.try_as('viewer', 'select * from public.breakpoint_events where id between 990101 and 990199'),
  'ok:1', 'a viewer sees the events of their own device');
select is(pg_temp.try_as('none', 'select * from public.breakpoint_events where id between 990101 and 990199'),
  'ok:0', 'a user without entries:view sees no event');
select is(pg_temp.try_as('anon', 'select * from public.breakpoint_events'), 'error:42501',
  'anon may not read breakpoint events');

-- Inserting
select is(pg_temp.try_as('a', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000a1', 'request', 'x')$$), 'ok:1',
  'a member records a held exchange of their own device');
select is(pg_temp.try_as('a', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000b1', 'request', 'x')$$), 'error:42501',
  'a member may not record an event for another user''s device');
select is(pg_temp.try_as('viewer', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000e1', 'request', 'x')$$), 'error:42501',
  'a viewer may not record an event');
select is(pg_temp.try_as('none', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000f1', 'request', 'x')$$), 'error:42501',
  'a user without a role may not record an event');
select is(pg_temp.try_as('anon', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000f1', 'request', 'x')$$), 'error:42501', 'anon may not record an event');
select is(pg_temp.try_as('admin', $$insert into public.breakpoint_events (device_uuid, phase, pattern)
  values ('de000000-0000-4000-8000-0000000000b1', 'request', 'x')$$), 'ok:1',
  'an admin records an event for any device');

-- Resuming (update)
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue'
  where id = 990101$$), 'ok:1', 'a member resumes a held exchange of their device');
select is((select resumed_by from public.breakpoint_events where id = 990101), pg_temp.uid('a'),
  'a resume records who resumed');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue'
  where id = 990104$$), 'ok:0', 'a member resumes no event of another user''s device');
select is(pg_temp.try_as('viewer', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue'
  where id = 990105$$), 'error:42501', 'a viewer may not resume an event');
select is(pg_temp.try_as('none', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue'
  where id = 990106$$), 'error:42501', 'a user without a role may not resume an event');
select is(pg_temp.try_as('anon', $$update public.breakpoint_events set resumed_at = now(), resolution = 'abort'$$),
  'error:42501', 'anon may not resume an event');
select is(pg_temp.try_as('admin', $$update public.breakpoint_events set resumed_at = now(), resolution = 'abort'
  where id = 990104$$), 'ok:1', 'an admin resumes any event');

-- Deleting
select is(pg_temp.try_as('a', 'delete from public.breakpoint_events where id = 990104'), 'ok:0',
  'a member deletes no event of another user''s device');
select is(pg_temp.try_as('viewer', 'delete from public.breakpoint_events where id = 990105'), 'error:42501',
  'a viewer may not delete an event');
select is(pg_temp.try_as('anon', 'delete from public.breakpoint_events'), 'error:42501', 'anon may not delete events');
select is(pg_temp.try_as('a', 'delete from public.breakpoint_events where id = 990103'), 'ok:1',
  'a member deletes an event of their own device');
select is(pg_temp.try_as('admin', 'delete from public.breakpoint_events where id = 990106'), 'ok:1',
  'an admin deletes any event');

-- Transitions: held → resumed once; only the resume fields change.
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'abort'
  where id = 990101$$), 'error:23514', 'a resumed event may not be resumed again');
select is(pg_temp.try_as('admin', $$update public.breakpoint_events set resolution = 'abort' where id = 990101$$),
  'error:23514', 'a resumed event''s resolution never changes, not even by an admin');
select is(pg_temp.try_as('service', $$update public.breakpoint_events set resumed_at = null, resolution = null
  where id = 990101$$), 'error:23514', 'a resumed event never returns to held, not even by the service');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set pattern = 'changed' where id = 990102$$),
  'error:23514', 'a held event''s pattern may not change');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set message = '{}' where id = 990102$$),
  'error:23514', 'a held event''s message may not change');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue',
  url = 'https://elsewhere.example' where id = 990102$$), 'error:23514',
  'a resume may not change the other fields in the same update');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now() where id = 990102$$),
  'error:23514', 'a resume needs a resolution');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'modify'
  where id = 990102$$), 'error:23514', 'a modify resume needs the modified message');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = held_at - interval '1 second',
  resolution = 'continue' where id = 990102$$), 'error:23514', 'an event may not resume before it was held');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue',
  modified_message = '{}' where id = 990102$$), 'error:23514', 'only a modify resume carries a modified message');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'modify',
  modified_message = '{"url":"https://a.example/changed"}' where id = 990102$$), 'ok:1',
  'a member resumes with a modified message');
select is((select resolution || ' ' || (modified_message ->> 'url') from public.breakpoint_events where id = 990102),
  'modify https://a.example/changed', 'the modify resume is stored');

select * from finish();
rollback;
