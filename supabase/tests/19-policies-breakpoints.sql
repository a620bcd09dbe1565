-- pgTAP: breakpoint_events policies (entries section, via device ownership) and the held → resumed
-- transition: resume once, only the resume fields change.
begin;
create extension if not exists pgtap with schema extensions;
select plan(38);

\ir helpers/actors.psql

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
select is(pg_temp.try_as('service', $$update public.breakpoint_events set resumed_at = held_at - interval '1 second',
  resolution = 'continue' where id = 990102$$), 'error:23514', 'an event may not resume before it was held');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'continue',
  modified_message = '{}' where id = 990102$$), 'error:23514', 'only a modify resume carries a modified message');
select is(pg_temp.try_as('a', $$update public.breakpoint_events set resumed_at = now(), resolution = 'modify',
  modified_message = '{"url":"https://a.example/changed"}' where id = 990102$$), 'ok:1',
  'a member resumes with a modified message');
select is((select resolution || ' ' || (modified_message ->> 'url') from public.breakpoint_events where id = 990102),
  'modify https://a.example/changed', 'the modify resume is stored');

-- Regression: the guard once refused the ON DELETE SET NULL of resumed_by, so a user who ever
-- resumed an event could not be deleted.
select lives_ok(format('delete from auth.users where id = %L', pg_temp.uid('admin')),
  'a user who resumed an event can still be deleted');

select * from finish();
rollback;
