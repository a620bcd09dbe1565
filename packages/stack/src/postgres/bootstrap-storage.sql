-- Platform bootstrap, storage: the `storage` schema hosted Supabase provides before any project
-- migration runs, with the tables, columns and helper functions of supabase/storage's tenant
-- migrations (migrations/tenant, up to 0063), owned by supabase_storage_admin as on hosted.
-- Applied after bootstrap.sql on every start, so idempotent. RLS is on for both tables and no
-- policy exists: an app's migrations add them, and until then only service_role reaches a row.
-- Written for this stack (docs/local-stack.md "Storage"); storage-api's own migration runner and
-- its S3 multipart, analytics, vector and versioning tables are not reproduced.

-- The storage service's login ---------------------------------------------------------------------
do $$
begin
  if not exists (select from pg_roles where rolname = 'supabase_storage_admin') then
    create role supabase_storage_admin login noinherit createrole;
  end if;
end
$$;

alter role supabase_storage_admin with password 'postgres';
alter role supabase_storage_admin set search_path = storage;
-- The service acts as each caller with `set local role`, as storage-api does: SET ROLE needs the
-- session user to be a member of the role.
grant anon, authenticated, service_role to supabase_storage_admin;

create schema if not exists storage authorization supabase_storage_admin;
grant usage on schema storage to postgres, anon, authenticated, service_role;

set role supabase_storage_admin;

-- What the owner creates here later is reachable by the API roles; RLS decides the rows.
alter default privileges in schema storage
  grant all on tables to postgres, anon, authenticated, service_role;
alter default privileges in schema storage
  grant all on functions to postgres, anon, authenticated, service_role;
alter default privileges in schema storage
  grant all on sequences to postgres, anon, authenticated, service_role;

do $$
begin
  if not exists (
    select from pg_type where typname = 'buckettype' and typnamespace = 'storage'::regnamespace
  ) then
    create type storage.buckettype as enum ('STANDARD', 'ANALYTICS', 'VECTOR');
  end if;
end
$$;

-- Tables (upstream's names for columns, constraints and indexes, so dumps and migrations written
-- against hosted projects find them) ---------------------------------------------------------------
create table if not exists storage.migrations (
  id integer primary key,
  name varchar(100) unique not null,
  hash varchar(40) not null,
  executed_at timestamp default current_timestamp
);
comment on table storage.migrations is
  'storage-api''s migration log on hosted projects; empty here, where the bootstrap is the schema.';

create table if not exists storage.buckets (
  id text not null primary key,
  name text not null,
  owner uuid,
  created_at timestamptz default now(),
  updated_at timestamptz default now(),
  public boolean default false,
  avif_autodetection boolean default false,
  file_size_limit bigint,
  allowed_mime_types text[],
  owner_id text,
  type storage.buckettype not null default 'STANDARD'
);
comment on table storage.buckets is 'Storage buckets: public flag, size and MIME limits.';
comment on column storage.buckets.owner is 'Field is deprecated, use owner_id instead';
-- Serves bucket lookups by name (storage-api keeps name = id).
create unique index if not exists bname on storage.buckets using btree (name);

create table if not exists storage.objects (
  id uuid not null default gen_random_uuid() primary key,
  bucket_id text constraint "objects_bucketId_fkey" references storage.buckets (id),
  name text,
  owner uuid,
  created_at timestamptz default now(),
  updated_at timestamptz default now(),
  last_accessed_at timestamptz default now(),
  metadata jsonb,
  path_tokens text[] generated always as (string_to_array(name, '/')) stored,
  version text,
  owner_id text,
  user_metadata jsonb
);
comment on table storage.objects is
  'Storage objects: one row per file; metadata holds size, mimetype, eTag and cacheControl.';
comment on column storage.objects.owner is 'Field is deprecated, use owner_id instead';
comment on column storage.objects.version is
  'Names the stored file of this object''s current content; a new one on every write.';
-- Serves every lookup of one object (bucket_id, name), and ON CONFLICT of an upsert.
create unique index if not exists bucketid_objname on storage.objects using btree (bucket_id, name);
-- Serves prefix matches on name.
create index if not exists name_prefix_search on storage.objects (name text_pattern_ops);
-- Serves storage.search: case-insensitive prefix scans within one bucket.
create index if not exists idx_objects_bucket_id_name_lower
  on storage.objects (bucket_id, (lower(name) collate "C"));

alter table storage.migrations enable row level security;
alter table storage.buckets enable row level security;
alter table storage.objects enable row level security;

-- Path helpers used in policies (same results as upstream's, including extension() returning the
-- whole file name when it has no dot) --------------------------------------------------------------
create or replace function storage.foldername(name text) returns text[]
language sql immutable
as $$
  select (string_to_array(name, '/'))[1 : array_length(string_to_array(name, '/'), 1) - 1]
$$;
comment on function storage.foldername(text) is
  'The folders of an object name: foldername(''a/b/c.png'') = {a,b}.';

create or replace function storage.filename(name text) returns text
language sql immutable
as $$
  select (string_to_array(name, '/'))[array_length(string_to_array(name, '/'), 1)]
$$;
comment on function storage.filename(text) is 'The last segment of an object name.';

create or replace function storage.extension(name text) returns text
language sql immutable
as $$
  select reverse(split_part(reverse(storage.filename(name)), '.', 1))
$$;
comment on function storage.extension(text) is
  'What follows the last dot of the file name (the whole file name when it has none).';

-- The API operation of the current request (storage.operation, set by the service per
-- transaction, e.g. 'storage.object.upload'), for operation-aware policies.
create or replace function storage.operation() returns text
language sql stable
as $$
  select current_setting('storage.operation', true)
$$;

create or replace function storage.allow_only_operation(expected_operation text) returns boolean
language sql stable
as $$
  select coalesce(expected_operation, '') <> ''
    and coalesce(
      regexp_replace(storage.operation(), '^storage\.', '')
        = regexp_replace(expected_operation, '^storage\.', ''),
      false)
$$;

create or replace function storage.allow_any_operation(expected_operations text[]) returns boolean
language sql stable
as $$
  select exists (
    select from unnest(expected_operations) as expected
    where coalesce(expected, '') <> ''
      and regexp_replace(storage.operation(), '^storage\.', '')
        = regexp_replace(expected, '^storage\.', ''))
$$;

-- Bytes stored per bucket (Studio's usage figure).
create or replace function storage.get_size_by_bucket()
returns table (size bigint, bucket_id text)
language sql stable
as $$
  select sum((obj.metadata ->> 'size')::bigint)::bigint as size, obj.bucket_id
  from storage.objects as obj
  group by obj.bucket_id
$$;

-- Tells whether the caller's policies admit inserting this object, without keeping it: the
-- insert is undone by raising PT200 (callers catch it), as upstream's helper of the same name.
create or replace function storage.can_insert_object(
  bucketid text, name text, owner uuid, metadata jsonb
) returns void
language plpgsql
as $$
begin
  insert into storage.objects (bucket_id, name, owner, metadata)
  values (bucketid, name, owner, metadata);
  raise sqlstate 'PT200' using message = 'ROLLBACK', detail = 'rollback successful insert';
end
$$;

-- The listing behind POST /object/list (storage-js `list`): the entries one level below
-- `prefix` whose names start with prefix || search (case-insensitively, taken literally): files
-- with their row, and folders (the next path segment of deeper objects) with nulls. Names are
-- relative to `prefix`. Sorted by name (folders among files, case-insensitively, byte order), or
-- by a time column (folders first, by name). Runs as the caller, so RLS hides rows it may not see.
-- `levels` is kept for upstream's signature and ignored, as upstream now ignores it too.
create or replace function storage.search(
  prefix text,
  bucketname text,
  limits integer default 100,
  levels integer default 1,
  offsets integer default 0,
  search text default '',
  sortcolumn text default 'name',
  sortorder text default 'asc'
)
returns table (
  name text,
  id uuid,
  updated_at timestamptz,
  created_at timestamptz,
  last_accessed_at timestamptz,
  metadata jsonb
)
language plpgsql stable security invoker
set search_path = ''
as $$
declare
  v_base_length integer := length(coalesce(prefix, ''));
  v_match text := lower(coalesce(prefix, '') || coalesce(search, ''));
  v_column text := lower(coalesce(sortcolumn, 'name'));
  v_by_name boolean;
  v_descending boolean := lower(coalesce(sortorder, 'asc')) = 'desc';
begin
  if v_column not in ('updated_at', 'created_at', 'last_accessed_at') then
    v_column := 'name';
  end if;
  v_by_name := v_column = 'name';

  return query
  with matching as (
    select o.name as full_name, o.id, o.updated_at, o.created_at, o.last_accessed_at, o.metadata,
           strpos(substr(o.name, length(v_match) + 1), '/') as slash
    from storage.objects as o
    where o.bucket_id = bucketname
      and starts_with(lower(o.name) collate "C", v_match collate "C")
  ),
  entries as (
    select distinct substr(m.full_name, v_base_length + 1, length(v_match) - v_base_length + m.slash - 1)
             as entry_name,
           true as is_folder,
           null::uuid as entry_id,
           null::timestamptz as entry_updated_at,
           null::timestamptz as entry_created_at,
           null::timestamptz as entry_last_accessed_at,
           null::jsonb as entry_metadata
    from matching as m
    where m.slash > 0
    union all
    select substr(m.full_name, v_base_length + 1), false, m.id, m.updated_at, m.created_at,
           m.last_accessed_at, m.metadata
    from matching as m
    where m.slash = 0
  ),
  keyed as (
    select e.*,
           case when v_by_name or not e.is_folder then 0 else -1 end as rank,
           case
             when v_by_name then lower(e.entry_name || case when e.is_folder then '/' else '' end)
             when e.is_folder then lower(e.entry_name)
           end collate "C" as text_key,
           case v_column
             when 'updated_at' then e.entry_updated_at
             when 'created_at' then e.entry_created_at
             when 'last_accessed_at' then e.entry_last_accessed_at
           end as time_key
    from entries as e
  )
  select k.entry_name, k.entry_id, k.entry_updated_at, k.entry_created_at,
         k.entry_last_accessed_at, k.entry_metadata
  from keyed as k
  order by k.rank,
           case when not v_descending then k.text_key end asc,
           case when v_descending then k.text_key end desc,
           case when not v_descending then k.time_key end asc,
           case when v_descending then k.time_key end desc,
           k.entry_name collate "C"
  limit least(coalesce(limits, 100), 1500)
  offset greatest(coalesce(offsets, 0), 0);
end
$$;

-- Triggers ------------------------------------------------------------------------------------------
create or replace function storage.update_updated_at_column() returns trigger
language plpgsql
as $$
begin
  new.updated_at = now();
  return new;
end
$$;

create or replace function storage.enforce_bucket_name_length() returns trigger
language plpgsql
as $$
begin
  if length(new.name) > 100 then
    raise exception 'bucket name "%" is too long (% characters). Max is 100.', new.name, length(new.name);
  end if;
  return new;
end
$$;

-- Hosted refuses plain DELETEs on the storage tables (they would orphan stored files); the
-- storage service sets storage.allow_delete_query for its own deletes.
create or replace function storage.protect_delete() returns trigger
language plpgsql
as $$
begin
  if coalesce(current_setting('storage.allow_delete_query', true), 'false') <> 'true' then
    raise exception 'Direct deletion from storage tables is not allowed. Use the Storage API instead.'
      using hint = 'This prevents accidental data loss from orphaned objects.',
            errcode = '42501';
  end if;
  return null;
end
$$;

do $$
begin
  if not exists (select from pg_trigger where tgname = 'update_objects_updated_at'
                   and tgrelid = 'storage.objects'::regclass) then
    create trigger update_objects_updated_at before update on storage.objects
      for each row execute function storage.update_updated_at_column();
  end if;
  if not exists (select from pg_trigger where tgname = 'enforce_bucket_name_length_trigger'
                   and tgrelid = 'storage.buckets'::regclass) then
    create trigger enforce_bucket_name_length_trigger
      before insert or update of name on storage.buckets
      for each row execute function storage.enforce_bucket_name_length();
  end if;
  if not exists (select from pg_trigger where tgname = 'protect_buckets_delete'
                   and tgrelid = 'storage.buckets'::regclass) then
    create trigger protect_buckets_delete before delete on storage.buckets
      for each statement execute function storage.protect_delete();
  end if;
  if not exists (select from pg_trigger where tgname = 'protect_objects_delete'
                   and tgrelid = 'storage.objects'::regclass) then
    create trigger protect_objects_delete before delete on storage.objects
      for each statement execute function storage.protect_delete();
  end if;
end
$$;

-- Grants (also on a database made by an earlier bootstrap) --------------------------------------------
grant all on storage.buckets, storage.objects, storage.migrations
  to anon, authenticated, service_role;
grant execute on all functions in schema storage to anon, authenticated, service_role;

reset role;

-- Project migrations (run as postgres) add policies and may read or seed these tables, as on hosted.
grant all on all tables in schema storage to postgres with grant option;
grant execute on all functions in schema storage to postgres;
