-- api_tokens: every OAuth-type access token's jti (001 §2.1), so a token can be revoked before it
-- expires; and the PostgREST pre-request hook that refuses revoked ones (architecture "Identity").
create table public.api_tokens (
  jti text primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  label text not null,
  client_id text,
  scopes text[] not null default '{}',
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked boolean generated always as (revoked_at is not null) stored,
  constraint api_tokens_jti_check check (char_length(jti) between 8 and 200),
  constraint api_tokens_label_check check (char_length(label) between 1 and 100),
  constraint api_tokens_expires_at_check check (expires_at > created_at)
);
comment on table public.api_tokens is
  'Issued access tokens by jti (label ''oauth'' for tool-server tokens). Rows are written by the '
  'issuer with the service role; a user may revoke their own tokens by setting revoked_at.';
comment on column public.api_tokens.revoked_at is
  'Set once to revoke; PostgREST then refuses the token (private.refuse_revoked_token).';
-- Serves: "my tokens" listings and the user-scoped RLS filter.
create index api_tokens_user_id_idx on public.api_tokens (user_id);

-- A revocation is final: revoked_at may go from null to a time, never back or elsewhere.
create function private.keep_revocation_final()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if old.revoked_at is not null and new.revoked_at is distinct from old.revoked_at then
    raise exception 'token % is already revoked', old.jti using errcode = '23514';
  end if;
  return new;
end
$$;
create trigger api_tokens_keep_revocation_final before update on public.api_tokens
  for each row execute function private.keep_revocation_final();

alter table public.api_tokens enable row level security;
revoke all on public.api_tokens from anon, authenticated;
-- Users read their tokens and may only flip revoked_at; minting is the issuer's (service role).
grant select on public.api_tokens to authenticated;
grant update (revoked_at) on public.api_tokens to authenticated;

create policy api_tokens_select on public.api_tokens for select to authenticated
  using (
    user_id = (select auth.uid())
    or ((select public.has_capability('users', 'view')) and (select private.is_admin())));
create policy api_tokens_update on public.api_tokens for update to authenticated
  using (
    user_id = (select auth.uid())
    or ((select public.has_capability('users', 'edit')) and (select private.is_admin())))
  with check (
    user_id = (select auth.uid())
    or ((select public.has_capability('users', 'edit')) and (select private.is_admin())));

-- Security definer: must see every token row whatever the caller's RLS allows, and runs for
-- anonymous requests too (whose role has no access to api_tokens).
create function private.refuse_revoked_token()
returns void
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  token_jti text := nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'jti';
begin
  if token_jti is not null and exists (
    select 1 from public.api_tokens t where t.jti = token_jti and t.revoked_at is not null
  ) then
    -- PostgREST turns SQLSTATE PGRST into the status and headers given in the detail.
    raise sqlstate 'PGRST' using
      message = json_build_object(
        'code', 'PGRST301', 'message', 'JWT revoked',
        'details', 'The token was revoked; sign in again.', 'hint', null)::text,
      detail = json_build_object(
        'status', 401,
        'headers', json_build_object(
          'WWW-Authenticate', 'Bearer error="invalid_token", error_description="JWT revoked"'))::text;
  end if;
end
$$;
comment on function private.refuse_revoked_token() is
  'PostgREST db-pre-request hook: answers 401 PGRST301 for a JWT whose jti is revoked.';
revoke execute on function private.refuse_revoked_token() from public;
grant usage on schema private to anon;
grant execute on function private.refuse_revoked_token() to anon, authenticated, service_role;

-- Configured in the database so hosted PostgREST applies it too (Supabase docs, "pre-request").
alter role authenticator set pgrst.db_pre_request = 'private.refuse_revoked_token';
notify pgrst, 'reload config';
