-- Realtime Authorization and Broadcast from the database: what hosted Supabase's Realtime creates in
-- schema realtime (supabase/realtime lib/realtime/tenants/repo/migrations: 20260420000000 squash,
-- 20260604120000 default partition, 20260630120000 ownership), so project migrations may create
-- policies on realtime.messages and call realtime.send() / realtime.broadcast_changes().
-- Owned by the local stack, applied right after bootstrap.sql, idempotent (it runs on every start).
-- docs/realtime.md "Private channels" and "Broadcast from the database" describe how the service
-- uses these objects.

do $$
begin
  if not exists (select from pg_catalog.pg_roles where rolname = 'supabase_realtime_admin') then
    create role supabase_realtime_admin nologin noinherit noreplication;
  end if;
end
$$;
grant supabase_realtime_admin to postgres;

create schema if not exists realtime;
grant usage on schema realtime
  to postgres, anon, authenticated, service_role, supabase_realtime_admin;
grant create on schema realtime to supabase_realtime_admin;

-- realtime.messages ------------------------------------------------------------------------------
-- Upstream's columns and key, partitioned by inserted_at. Hosted Realtime adds a partition per day
-- and drops those older than 72 hours; here every row lands in the default partition and the
-- service deletes rows older than 72 hours (docs/realtime.md "Broadcast from the database").
create table if not exists realtime.messages (
  topic text not null,
  extension text not null,
  payload jsonb,
  event text,
  private boolean default false,
  updated_at timestamp without time zone not null default now(),
  inserted_at timestamp without time zone not null default now(),
  id uuid not null default gen_random_uuid()
) partition by range (inserted_at);

do $$
begin
  if not exists (
    select from pg_catalog.pg_constraint
    where conname = 'messages_pkey' and connamespace = 'realtime'::regnamespace
  ) then
    alter table realtime.messages add constraint messages_pkey primary key (id, inserted_at);
  end if;
end
$$;

create table if not exists realtime.messages_default partition of realtime.messages default;

-- Serves upstream's replay query: the recent private broadcasts of a topic.
create index if not exists messages_inserted_at_topic_index
  on realtime.messages using btree (inserted_at desc, topic)
  where extension = 'broadcast' and private is true;

alter table realtime.messages enable row level security;
alter table realtime.messages owner to supabase_realtime_admin;

comment on table realtime.messages is
  'Realtime: broadcasts sent from the database (realtime.send, realtime.broadcast_changes) and the '
  'table whose RLS policies authorize private channels (extension broadcast or presence).';

grant select, insert, update on realtime.messages to postgres, anon, authenticated, service_role;
grant delete, truncate, references, trigger on realtime.messages to postgres;
grant all on realtime.messages to supabase_realtime_admin;

-- realtime.topic() -------------------------------------------------------------------------------
create or replace function realtime.topic() returns text
language sql stable
as $$
  select nullif(pg_catalog.current_setting('realtime.topic', true), '')::text;
$$;
alter function realtime.topic() owner to supabase_realtime_admin;
comment on function realtime.topic() is
  'Realtime: the channel topic being authorized (set by Realtime, and by realtime.send()).';

-- realtime.send() --------------------------------------------------------------------------------
-- Security invoker as upstream: the insert runs as the caller, so realtime.messages' policies
-- decide whether an API role may send. A failure never aborts the caller's transaction: it
-- becomes a WARNING, as upstream (20241220123912).
create or replace function realtime.send(
  payload jsonb, event text, topic text, private boolean default true
) returns void
language plpgsql
as $$
declare
  message_id uuid := gen_random_uuid();
begin
  begin
    -- The payload carries the message id unless the caller set one (upstream 20251103001201).
    if not (payload ? 'id') then
      payload := pg_catalog.jsonb_set(payload, '{id}', pg_catalog.to_jsonb(message_id));
    end if;
    -- Insert policies may read realtime.topic().
    perform pg_catalog.set_config('realtime.topic', topic, true);
    insert into realtime.messages (id, payload, event, topic, private, extension)
    values (message_id, payload, event, topic, private, 'broadcast');
  exception
    when others then
      raise warning 'ErrorSendingBroadcastMessage: %', sqlerrm;
  end;
end;
$$;
alter function realtime.send(jsonb, text, text, boolean) owner to supabase_realtime_admin;
comment on function realtime.send(jsonb, text, text, boolean) is
  'Realtime: broadcasts payload as event to the channels of topic (private ones by default).';

-- realtime.broadcast_changes() ---------------------------------------------------------------------
-- For row triggers: sends {operation, table, schema, record, old_record} through realtime.send().
create or replace function realtime.broadcast_changes(
  topic_name text, event_name text, operation text, table_name text, table_schema text,
  new record, old record, level text default 'ROW'
) returns void
language plpgsql
as $$
declare
  row_data jsonb;
begin
  if level = 'STATEMENT' then
    raise exception 'function can only be triggered for each row, not for each statement';
  end if;
  if operation in ('INSERT', 'UPDATE', 'DELETE') then
    row_data := pg_catalog.jsonb_build_object(
      'old_record', old, 'record', new, 'operation', operation,
      'table', table_name, 'schema', table_schema);
    perform realtime.send(row_data, event_name, topic_name);
  else
    raise exception 'Unexpected operation type: %', operation;
  end if;
exception
  when others then
    raise exception 'Failed to process the row: %', sqlerrm;
end;
$$;
alter function realtime.broadcast_changes(text, text, text, text, text, record, record, text)
  owner to supabase_realtime_admin;
comment on function realtime.broadcast_changes(text, text, text, text, text, record, record, text) is
  'Realtime: from a row trigger, broadcasts the change to the private channels of topic_name.';

-- Upstream leaves these callable by every role; the API roles are granted explicitly instead of
-- through PUBLIC, with the same effect for them.
revoke execute on function realtime.topic() from public;
revoke execute on function realtime.send(jsonb, text, text, boolean) from public;
revoke execute on function
  realtime.broadcast_changes(text, text, text, text, text, record, record, text) from public;
grant execute on function realtime.topic()
  to postgres, anon, authenticated, service_role, supabase_realtime_admin;
grant execute on function realtime.send(jsonb, text, text, boolean)
  to postgres, anon, authenticated, service_role, supabase_realtime_admin;
grant execute on function
  realtime.broadcast_changes(text, text, text, text, text, record, record, text)
  to postgres, anon, authenticated, service_role, supabase_realtime_admin;
