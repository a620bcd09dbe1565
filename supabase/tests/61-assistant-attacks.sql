-- pgTAP: the assistant's write proposals tried as a provider that repeats tool call ids would
-- (or a planted instruction that leans on one): a call id already used for one write must not
-- hand out that write's confirmation for another, or the artifact the user confirms describes a
-- write that is not the one applied.
begin;
create extension if not exists pgtap with schema extensions;
select plan(4);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now() - interval '1 day', now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000006a2', 'pgtap assistant attacks a', pg_temp.uid('a'));
insert into public.entries (id, ts, kind, device_uuid, payload) values
  (996101, now() - interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000006a2',
   '{"method":"GET","host":"a.t.test","path":"/","url":"https://a.t.test/"}'),
  (996102, now() - interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000006a2',
   '{"method":"GET","host":"a.t.test","path":"/b","url":"https://a.t.test/b"}');

create temporary table pgtap_first on commit drop as
select (pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996101, 'harmless', 'call_0') ->> 'confirmation'$$))::uuid
  as id;
grant select on pgtap_first to authenticated;

select is(pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996102, 'other', 'call_0')::text$$), 'error:22023',
  'the same call id for another request and tag is refused, not answered with the first confirmation');
select is(pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996101, 'other', 'call_0')::text$$), 'error:22023',
  'so is the same call id for the same request with another tag');
select is(pg_temp.value_as('a',
  $$select (public.assistant_propose_tag(996101, 'harmless', 'call_0') ->> 'confirmation')
     = (select id::text from pgtap_first)$$), 'true',
  'the same call id for the same write still answers the same proposal');
select is((select count(*)::int from private.assistant_proposals
           where user_id = pg_temp.uid('a') and call_id = 'call_0'), 1,
  'one proposal in all');

select * from finish();
rollback;
