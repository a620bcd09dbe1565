-- Privileges the API roles never need. The platform's default privileges give them TRUNCATE,
-- REFERENCES and TRIGGER on every table in public (TRUNCATE bypasses RLS and the capability
-- triggers), sequence rights (identity columns need none), and anon everything on new objects.
-- PostgREST issues none of these; they go, now and for objects later migrations create. The
-- service role keeps its grants.
revoke truncate, references, trigger on all tables in schema public from anon, authenticated;
revoke all on all sequences in schema public from anon, authenticated;
alter default privileges for role postgres in schema public
  revoke truncate, references, trigger on tables from authenticated;
alter default privileges for role postgres in schema public
  revoke all on tables from anon;
alter default privileges for role postgres in schema public
  revoke all on sequences from anon, authenticated;
alter default privileges for role postgres in schema public
  revoke all on functions from anon;
