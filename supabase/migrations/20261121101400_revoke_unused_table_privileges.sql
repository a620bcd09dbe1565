-- The platform's default privileges give API roles TRUNCATE, REFERENCES and TRIGGER on every
-- table in public. PostgREST never issues them, but TRUNCATE bypasses RLS and the capability
-- triggers, so the API roles lose all three (defence in depth; the service role keeps them).
revoke truncate, references, trigger on all tables in schema public from anon, authenticated;
