-- Federation clients (000 §2.2): one record per partner app, readable by federation admins and
-- written only through the admin RPCs (20261121103200). The HMAC secret is kept apart, sealed
-- with the broker's public key (000 §5: issued once, never read back).
create table public.federation_clients (
  client_id text primary key,
  client_name text not null,
  verify_mode text not null,
  backend_base_url text,
  jwks_url text,
  issuer text,
  audience text,
  capped_role text not null references public.roles (slug) on update cascade on delete restrict,
  email_linking_trusted boolean not null default false,
  emails_verified_by_partner boolean not null default false,
  enabled boolean not null default true,
  start_limit_per_minute integer not null default 600,
  exchange_limit_per_minute integer not null default 600,
  ip_limit_per_minute integer not null default 60,
  hmac_secret_minted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint federation_clients_client_id_check check (client_id ~ '^svc_[a-z0-9_]+$'),
  constraint federation_clients_client_name_check check (char_length(client_name) between 1 and 100),
  constraint federation_clients_verify_mode_check
    check (verify_mode in ('backend_bearer', 'hmac', 'hosted_jwt')),
  -- 000 §4.1: each verify mode needs its own trust anchor.
  constraint federation_clients_backend_base_url_check check (
    (verify_mode <> 'backend_bearer' or backend_base_url is not null)
    and (backend_base_url is null or backend_base_url ~ '^https?://[^/?#@\s]+(/[^?#\s]*)?$')),
  constraint federation_clients_jwks_url_check check (
    (verify_mode <> 'hosted_jwt' or (jwks_url is not null and issuer is not null
                                     and audience is not null))
    and (jwks_url is null or jwks_url ~ '^https?://[^/?#@\s]+(/[^#\s]*)?$')),
  constraint federation_clients_limits_check check (
    start_limit_per_minute > 0 and exchange_limit_per_minute > 0 and ip_limit_per_minute > 0)
);
comment on table public.federation_clients is
  'Partner apps allowed to hand users to the companion app (000 §2.2). Written only by '
  'upsert_federation_client / delete_federation_client; holds no secret.';
comment on column public.federation_clients.emails_verified_by_partner is
  'The partner verifies every e-mail it sends (backend_bearer, hosted_jwt): an e-mail without '
  'email_verified is then trusted. Otherwise only email_verified = true is (reference A, §1).';
comment on column public.federation_clients.capped_role is
  'App role (roles.slug, never an admin role) every user provisioned through this client is '
  'clamped to (000 §4.5 rule 4).';
comment on column public.federation_clients.ip_limit_per_minute is
  'Requests per minute one client IP may make to /start or /exchange (each counted apart).';

alter table public.federation_clients enable row level security;
revoke all on public.federation_clients from anon, authenticated;
grant select on public.federation_clients to authenticated;
-- Trust anchors and limits are admin matters: reading needs federation:edit and an admin role.
create policy federation_clients_select on public.federation_clients for select to authenticated
  using ((select public.has_capability('federation', 'edit')) and (select private.is_admin()));

-- The sealed HMAC secrets: no API role has any privilege here, whatever RLS says.
create table private.federation_client_secrets (
  client_id text primary key references public.federation_clients (client_id) on delete cascade,
  sealed_secret bytea not null,
  minted_at timestamptz not null default now()
);
comment on table private.federation_client_secrets is
  'HMAC secrets encrypted (OpenPGP, pgcrypto pgp_pub_encrypt) to the broker''s public key; only '
  'the broker holds the private key (FEDERATION_SECRET_KEY), so the database is value-blind.';
alter table private.federation_client_secrets enable row level security;

-- The broker's public sealing key (one row). Production sets it once per project; the local
-- seed sets the well-known development key. No key, no minting.
create table private.federation_sealing_key (
  id integer primary key default 1,
  public_key bytea not null,
  created_at timestamptz not null default now(),
  constraint federation_sealing_key_id_check check (id = 1)
);
comment on table private.federation_sealing_key is
  'Dearmored OpenPGP public key the HMAC secrets are sealed to; its private half lives only in '
  'the federation-broker function secret FEDERATION_SECRET_KEY.';
alter table private.federation_sealing_key enable row level security;
