-- The private schema (helpers and tables no API client may reach: 001 §2.2 puts the API in public
-- only) and the extensions the data model needs: pg_trgm for entry search (001 §4.2 rule 4) and
-- pg_cron for partition upkeep. Supabase's documented placement: pg_trgm in extensions, pg_cron in
-- pg_catalog (it creates its own `cron` schema).
create schema if not exists private;
comment on schema private is
  'Internal helpers, partitions and bookkeeping; never exposed by PostgREST.';
revoke all on schema private from public;
-- Policies call helpers here, so the API roles may resolve names in it; each object still needs
-- its own grant, and tables here get none.
grant usage on schema private to authenticated, service_role;

create extension if not exists pg_trgm with schema extensions;
create extension if not exists pg_cron with schema pg_catalog;

-- No function this project creates is executable by PUBLIC unless a migration grants it. Only the
-- global form removes PostgreSQL's built-in EXECUTE-to-PUBLIC default (a per-schema default
-- privilege can add grants, never remove that one).
alter default privileges revoke execute on functions from public;
