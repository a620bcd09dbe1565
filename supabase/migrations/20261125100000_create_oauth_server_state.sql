-- The tool server's OAuth 2.1 authorization-server state (001 §2.1, §3), all private so the
-- service stays stateless and scales out: registered clients (RFC 7591, and cached Client ID
-- Metadata Documents), authorization requests keyed by the request id the consent page carries,
-- hashed single-use codes, grants, refresh-token families, the access tokens each family issued
-- (their jti rows live in public.api_tokens) and per-address rate-limit windows.
-- No API role has privileges here: PostgREST never exposes schema private, and the tool server
-- reaches these tables over its own database connection as their owner.

create table private.oauth_clients (
  client_id text primary key,
  -- registration: POST /register (RFC 7591); metadata_document: client_id is an https URL whose
  -- document we fetched (draft-ietf-oauth-client-id-metadata-document); first_party: the
  -- dashboard's session exchange (001 §1).
  source text not null,
  client_secret_hash text,
  token_endpoint_auth_method text not null,
  redirect_uris text[] not null default '{}',
  grant_types text[] not null default '{authorization_code,refresh_token}',
  response_types text[] not null default '{code}',
  application_type text not null default 'web',
  client_name text,
  client_uri text,
  logo_uri text,
  scope text,
  software_id text,
  software_version text,
  -- The metadata as registered, echoed by /register (RFC 7591 §3.2.1).
  metadata jsonb not null default '{}',
  registered_from text,
  created_at timestamptz not null default now(),
  -- metadata_document only: when the cached document must be fetched again.
  metadata_expires_at timestamptz,
  constraint oauth_clients_source_check
    check (source in ('registration', 'metadata_document', 'first_party')),
  constraint oauth_clients_token_endpoint_auth_method_check
    check (token_endpoint_auth_method in ('none', 'client_secret_basic', 'client_secret_post')),
  constraint oauth_clients_client_secret_hash_check
    check ((token_endpoint_auth_method = 'none') = (client_secret_hash is null)),
  constraint oauth_clients_application_type_check check (application_type in ('web', 'native')),
  constraint oauth_clients_client_id_check check (char_length(client_id) between 8 and 2048),
  constraint oauth_clients_redirect_uris_check check (cardinality(redirect_uris) <= 20)
);
comment on table private.oauth_clients is
  'OAuth clients of the tool server. Registered clients never expire (001 §2.1); metadata '
  'documents are re-fetched after metadata_expires_at. Secrets are kept only as SHA-256.';

create table private.oauth_authorization_requests (
  id text primary key,
  client_id text not null references private.oauth_clients (client_id) on delete cascade,
  -- The host the client called: the iss of the authorization response (RFC 9207) and the token.
  issuer text not null,
  redirect_uri text not null,
  state text,
  code_challenge text not null,
  scope text not null,
  resource text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  decided_at timestamptz,
  decision text,
  user_id uuid references auth.users (id) on delete cascade,
  constraint oauth_authorization_requests_id_check check (char_length(id) between 32 and 64),
  constraint oauth_authorization_requests_decision_check
    check (decision in ('approved', 'denied') and decided_at is not null or decision is null),
  constraint oauth_authorization_requests_code_challenge_check
    check (code_challenge ~ '^[A-Za-z0-9_-]{43}$')
);
comment on table private.oauth_authorization_requests is
  'Authorization requests awaiting consent, keyed by the request id (the only thing in the '
  'consent URL, 001 §2.1). Decided once (001 §3); expire after a few minutes.';
-- Serves: the sweep of expired requests.
create index oauth_authorization_requests_expires_at_idx
  on private.oauth_authorization_requests (expires_at);
-- Serves: client deletion cascades.
create index oauth_authorization_requests_client_id_idx
  on private.oauth_authorization_requests (client_id);
-- Serves: user deletion cascades.
create index oauth_authorization_requests_user_id_idx
  on private.oauth_authorization_requests (user_id);

create table private.oauth_grants (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  client_id text not null references private.oauth_clients (client_id) on delete cascade,
  scope text not null,
  -- The resource of the latest approval, for listings. Tokens take theirs from the request or the
  -- refresh family: one grant may cover both origins, each its own resource.
  resource text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz not null default now(),
  revoked_at timestamptz
);
comment on table private.oauth_grants is
  'What a user allowed a client (one live grant per user and client). Revoking a grant revokes '
  'every token issued under it.';
-- Serves: "the live grant of this user for this client" at consent; enforces one per pair.
create unique index oauth_grants_user_id_client_id_idx
  on private.oauth_grants (user_id, client_id) where revoked_at is null;
-- Serves: client deletion cascades.
create index oauth_grants_client_id_idx on private.oauth_grants (client_id);

create table private.oauth_codes (
  code_hash text primary key,
  request_id text not null
    references private.oauth_authorization_requests (id) on delete cascade,
  grant_id uuid not null references private.oauth_grants (id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz,
  -- The refresh-token family its exchange started: revoked if the code is ever replayed.
  family_id uuid,
  constraint oauth_codes_code_hash_check check (code_hash ~ '^[0-9a-f]{64}$')
);
comment on table private.oauth_codes is
  'Authorization codes as SHA-256 hex only; single-use, 60 s. A second presentation revokes what '
  'the first issued (OAuth 2.1 §4.1.3).';
-- Serves: request deletion cascades.
create index oauth_codes_request_id_idx on private.oauth_codes (request_id);
-- Serves: grant revocation cascades.
create index oauth_codes_grant_id_idx on private.oauth_codes (grant_id);
-- Serves: the sweep of expired codes.
create index oauth_codes_expires_at_idx on private.oauth_codes (expires_at);

create table private.oauth_refresh_tokens (
  token_hash text primary key,
  family_id uuid not null,
  grant_id uuid not null references private.oauth_grants (id) on delete cascade,
  issuer text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  -- Set when this token was exchanged for its successor (rotation, OAuth 2.1 §4.3.1).
  rotated_at timestamptz,
  revoked_at timestamptz,
  constraint oauth_refresh_tokens_token_hash_check check (token_hash ~ '^[0-9a-f]{64}$')
);
comment on table private.oauth_refresh_tokens is
  'Refresh tokens as SHA-256 hex, in families: each use rotates; presenting a rotated token again '
  'revokes the whole family and its access tokens.';
-- Serves: family revocation.
create index oauth_refresh_tokens_family_id_idx on private.oauth_refresh_tokens (family_id);
-- Serves: grant revocation.
create index oauth_refresh_tokens_grant_id_idx on private.oauth_refresh_tokens (grant_id);
-- Serves: the sweep of expired tokens.
create index oauth_refresh_tokens_expires_at_idx on private.oauth_refresh_tokens (expires_at);

create table private.oauth_access_tokens (
  jti text primary key references public.api_tokens (jti) on delete cascade,
  grant_id uuid references private.oauth_grants (id) on delete cascade,
  family_id uuid
);
comment on table private.oauth_access_tokens is
  'Which grant and refresh family issued each access token (api_tokens holds the jti and its '
  'revocation), so revoking a grant or a family reaches its access tokens. First-party tokens '
  'have neither.';
-- Serves: family revocation.
create index oauth_access_tokens_family_id_idx on private.oauth_access_tokens (family_id);
-- Serves: grant revocation.
create index oauth_access_tokens_grant_id_idx on private.oauth_access_tokens (grant_id);

create table private.oauth_rate_counters (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null default 0,
  constraint oauth_rate_counters_pkey primary key (bucket, window_start)
);
comment on table private.oauth_rate_counters is
  'Fixed windows per bucket (endpoint x client address) for the OAuth endpoints.';
-- Serves: the sweep of old windows.
create index oauth_rate_counters_window_start_idx on private.oauth_rate_counters (window_start);

alter table private.oauth_clients enable row level security;
alter table private.oauth_authorization_requests enable row level security;
alter table private.oauth_grants enable row level security;
alter table private.oauth_codes enable row level security;
alter table private.oauth_refresh_tokens enable row level security;
alter table private.oauth_access_tokens enable row level security;
alter table private.oauth_rate_counters enable row level security;
revoke all on private.oauth_clients, private.oauth_authorization_requests, private.oauth_grants,
  private.oauth_codes, private.oauth_refresh_tokens, private.oauth_access_tokens,
  private.oauth_rate_counters from public, anon, authenticated, service_role;

-- Revokes every access token and refresh token of the given grants and families, in one
-- statement pair; returns how many access tokens it revoked.
create function private.revoke_oauth_tokens(grant_ids uuid[], family_ids uuid[])
returns integer
language plpgsql
set search_path = ''
as $$
declare
  revoked integer;
begin
  update private.oauth_refresh_tokens
     set revoked_at = now()
   where revoked_at is null
     and (grant_id = any(grant_ids) or family_id = any(family_ids));
  update public.api_tokens t
     set revoked_at = now()
    from private.oauth_access_tokens a
   where a.jti = t.jti
     and t.revoked_at is null
     and (a.grant_id = any(grant_ids) or a.family_id = any(family_ids));
  get diagnostics revoked = row_count;
  return revoked;
end
$$;
comment on function private.revoke_oauth_tokens(uuid[], uuid[]) is
  'Revokes the refresh and access tokens of grants and refresh families (grant revocation, '
  'refresh reuse, code replay).';
revoke execute on function private.revoke_oauth_tokens(uuid[], uuid[]) from public, anon,
  authenticated, service_role;

-- Removes what can no longer be used: decided or expired requests after a day, expired codes
-- and refresh tokens, old rate windows. Clients and grants stay (registrations never expire).
create function private.sweep_oauth_state()
returns void
language sql
set search_path = ''
as $$
  delete from private.oauth_codes where expires_at < now() - interval '1 day';
  delete from private.oauth_authorization_requests where expires_at < now() - interval '1 day';
  delete from private.oauth_refresh_tokens where expires_at < now() - interval '1 day';
  delete from private.oauth_rate_counters where window_start < now() - interval '1 day';
$$;
revoke execute on function private.sweep_oauth_state() from public, anon, authenticated,
  service_role;

select cron.schedule('oauth-state-sweep', '17 * * * *', 'select private.sweep_oauth_state()');

-- The dashboard's session exchange (POST /first-party-token) names this client in its tokens.
insert into private.oauth_clients (client_id, source, token_endpoint_auth_method, client_name,
  grant_types, response_types)
values ('dashboard', 'first_party', 'none', 'Dashboard', '{}', '{}');
