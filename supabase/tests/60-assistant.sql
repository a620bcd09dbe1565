-- pgTAP: the assistant's state (001 §4.3): the per-user question limit, write proposals only on
-- captures of the caller's own devices with tags:edit (admins included), idempotent on the tool
-- call id, and a confirmation applied once by its own user only, from a dashboard session only:
-- not with the same user's OAuth token (an MCP client's), nor a token without a session.
begin;
create extension if not exists pgtap with schema extensions;
select plan(23);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now() - interval '1 day', now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000006a1', 'pgtap assistant a', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000006d1', 'pgtap assistant admin', pg_temp.uid('admin'));
insert into public.entries (id, ts, kind, device_uuid, payload) values
  (996001, now() - interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000006a1',
   '{"method":"GET","host":"a.t.test","path":"/","url":"https://a.t.test/"}'),
  (996002, now() - interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000006d1',
   '{"method":"GET","host":"admin.t.test","path":"/","url":"https://admin.t.test/"}');

-- The rate limit.
select is(pg_temp.value_as('a', 'select public.assistant_take_turn(2)::text'), '1',
  'the first question of the minute leaves one of two');
select is(pg_temp.value_as('a', 'select public.assistant_take_turn(2)::text'), '0',
  'the second leaves none');
select is(pg_temp.value_as('a', 'select public.assistant_take_turn(2)::text'), 'error:PT429',
  'the third in the same minute is refused with 429');
select is(pg_temp.value_as('b', 'select public.assistant_take_turn(2)::text'), '1',
  'another user has their own count');
select is(pg_temp.value_as('anon', 'select public.assistant_take_turn(2)::text'), 'error:42501',
  'anon may not ask');
select is(pg_temp.try_as('a', 'select * from private.assistant_turns'), 'error:42501',
  'no API role reads (or resets) the counters');

-- Proposals.
select is(pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996001, 'bug', 'call-1') ->> 'action'$$), 'tag_request',
  'a member proposes tagging a capture of their own device');
select is(pg_temp.value_as('a',
  $$select (public.assistant_propose_tag(996001, 'bug', 'call-1') ->> 'confirmation')
     = (public.assistant_propose_tag(996001, 'bug', 'call-1') ->> 'confirmation')$$), 'true',
  'the same tool call id proposes the same write');
select is(pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996002, 'bug', 'call-2')::text$$), 'error:PT404',
  'a member may not propose on another user''s capture');
select is(pg_temp.value_as('admin',
  $$select public.assistant_propose_tag(996001, 'bug', 'call-3')::text$$), 'error:PT404',
  'an admin may not propose on a device they do not own (001 §4.3)');
select is(pg_temp.value_as('viewer',
  $$select public.assistant_propose_tag(996001, 'bug', 'call-4')::text$$), 'error:42501',
  'a role without tags:edit may not propose');
select is(pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996001, '  ', 'call-5')::text$$), 'error:22023',
  'an empty tag name is refused');
select is((select count(*)::int from public.entry_tags where entry_id = 996001), 0,
  'a proposal writes no tag');

-- Confirmations.
create temporary table pgtap_proposal on commit drop as
select (pg_temp.value_as('a',
  $$select public.assistant_propose_tag(996001, 'checkout', 'call-6') ->> 'confirmation'$$))::uuid
  as id;
grant select on pgtap_proposal to authenticated;
-- The user's tokens: a dashboard session, and one the tool server issued to an MCP client.
insert into public.api_tokens (jti, user_id, label, client_id, expires_at)
values ('pgtap-assistant-oauth', pg_temp.uid('a'), 'oauth', 'pgtap-agent',
        now() + interval '1 hour');
create temporary table pgtap_tokens on commit drop as
select 'a session'::text as name, pg_temp.session_claims('a') as claims
union all select 'b session', pg_temp.session_claims('b')
union all select 'a oauth', pg_temp.claims('a')
  || '{"jti": "pgtap-assistant-oauth", "client_id": "pgtap-agent"}'::jsonb;
grant select on pgtap_tokens to authenticated;
create function pg_temp.value_as_token(token text, stmt text) returns text language sql
as $$ select pg_temp.value_claims((select claims from pgtap_tokens where name = token), stmt) $$;
select is(pg_temp.value_as_token('a oauth',
  'select public.assistant_confirm_write((select id from pgtap_proposal))::text'), 'error:PT403',
  'its user''s OAuth token (an MCP client''s) cannot confirm it: 403');
select is(pg_temp.value_as('a',
  'select public.assistant_confirm_write((select id from pgtap_proposal))::text'), 'error:PT403',
  'nor a token of its user that names no session');
select is((select count(*)::int from public.entry_tags where entry_id = 996001), 0,
  'the refused confirmations applied nothing');
select is(pg_temp.value_as_token('b session',
  'select public.assistant_confirm_write((select id from pgtap_proposal))::text'), 'error:PT404',
  'another user cannot confirm it');
select is(pg_temp.value_as_token('a session',
  $$select public.assistant_confirm_write('00000000-0000-4000-8000-000000000000')::text$$),
  'error:PT404', 'an unknown confirmation is refused');
select is(pg_temp.value_as_token('a session',
  $$select public.assistant_confirm_write((select id from pgtap_proposal)) ->> 'applied'$$),
  'true', 'its user confirms it from a dashboard session');
select is((select count(*)::int from public.entry_tags et join public.tags t on t.id = et.tag_id
           where et.entry_id = 996001 and t.name = 'checkout' and t.owner_user_id = pg_temp.uid('a')),
  1, 'the confirmed tag is on the capture, in a tag of the user');
select is(pg_temp.value_as_token('a session',
  'select public.assistant_confirm_write((select id from pgtap_proposal))::text'), 'error:PT409',
  'a second confirmation is refused');
select is((select count(*)::int from public.entry_tags where entry_id = 996001), 1,
  'and applies nothing more');
update private.assistant_proposals set expires_at = now() - interval '1 second'
where call_id = 'call-1';
create temporary table pgtap_expired on commit drop as
select id from private.assistant_proposals where call_id = 'call-1';
grant select on pgtap_expired to authenticated;
select is(pg_temp.value_as_token('a session',
  'select public.assistant_confirm_write((select id from pgtap_expired))::text'),
  'error:PT404', 'an expired proposal cannot be confirmed');

select * from finish();
rollback;
