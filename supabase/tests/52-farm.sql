-- pgTAP: the farm's gating state (docs/farm.md). The capability sections whoami() lists are exactly
-- those role_capabilities accepts; farm and farm_scripts are granted like any section; farm_audit
-- is readable by admins only and written by no API role. The pending actions a person approves are
-- 56-farm-pending-actions.sql.
begin;
create extension if not exists pgtap with schema extensions;
select plan(17);

\ir helpers/actors.psql

-- One list of sections: the check constraint and capability_sections() agree.
select set_eq(
  $$select unnest(private.capability_sections())$$,
  $$select m[1] from regexp_matches(
      (select pg_get_constraintdef(oid) from pg_constraint
        where conname = 'role_capabilities_section_check'), '''([a-z_]+)''', 'g') as m$$,
  'capability_sections() lists exactly the sections role_capabilities accepts');
select ok('farm' = any(private.capability_sections())
          and 'farm_scripts' = any(private.capability_sections()),
  'farm and farm_scripts are capability sections');

-- Admins hold the farm; a member does not until a role grants it.
select ok((pg_temp.value_as('admin', 'select public.whoami()::text')::jsonb -> 'capabilities')
          ?& array['farm:view', 'farm:edit', 'farm_scripts:edit'],
  'an admin holds farm:edit and farm_scripts:edit');
select is(pg_temp.value_as('a', $$select public.has_capability('farm', 'edit')::text$$), 'false',
  'a member does not hold farm:edit');
insert into public.roles (slug, name) values ('pgtap_farmer', 'pgTAP farmer');
insert into public.role_capabilities (role_id, section, action)
select id, 'farm', 'edit' from public.roles where slug = 'pgtap_farmer';
insert into public.user_roles (user_id, role_id)
select pg_temp.uid('b'), id from public.roles where slug = 'pgtap_farmer';
select ok((pg_temp.value_as('b', 'select public.whoami()::text')::jsonb -> 'capabilities')
          ? 'farm:edit',
  'a role granted farm:edit gives it (whoami lists it)');
select is(pg_temp.value_as('b', $$select public.has_capability('farm_scripts', 'edit')::text$$),
  'false', 'farm:edit does not imply farm_scripts:edit');

-- The audit: admins read every row, others none; no API role writes it.
insert into public.farm_audit (user_id, tool, event, arguments)
values (pg_temp.uid('a'), 'farm_run_shell', 'refused', '{"command":"id"}'),
       (pg_temp.uid('admin'), 'farm_run_shell', 'ran', '{"command":"id"}');
select ok((select relrowsecurity from pg_class where oid = 'public.farm_audit'::regclass),
  'farm_audit has row level security enabled');
select is(pg_temp.try_as('admin', 'select * from public.farm_audit'), 'ok:2',
  'an admin reads every audit row');
select is(pg_temp.try_as('a', 'select * from public.farm_audit'), 'ok:0',
  'a member reads no audit row, not even their own');
select is(pg_temp.try_as('b', 'select * from public.farm_audit'), 'ok:0',
  'a non-admin holding farm:edit reads no audit row');
select is(pg_temp.try_as('anon', 'select * from public.farm_audit'), 'error:42501',
  'anon cannot read the audit');
select is(pg_temp.try_as(who, stmt), 'error:42501', who || ' cannot write the audit: ' || stmt)
from unnest(array['a', 'admin']) as who,
     unnest(array[
       $$insert into public.farm_audit (tool, event) values ('farm_run_shell', 'ran')$$,
       $$update public.farm_audit set event = 'ran'$$,
       $$delete from public.farm_audit$$]) as stmt;

select * from finish();
rollback;
