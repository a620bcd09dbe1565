-- The broker's working state, all private: hand-off codes (000 §2.3), used HMAC jtis (§2.4),
-- rate-limit counters (§8) and partner identities (§4.5). No API role has privileges here; the
-- broker reaches them only through the service-role RPCs of 20261121103300.
create table private.federation_codes (
  code_hash bytea primary key,
  client_id text not null references public.federation_clients (client_id) on delete cascade,
  code_challenge text not null,
  partner_sub text not null,
  partner_email text,
  email_normalized text,
  expires_at timestamptz not null,
  consumed_at timestamptz,
  failed_attempts integer not null default 0,
  created_at timestamptz not null default now()
);
comment on table private.federation_codes is
  'Hand-off codes, stored only as SHA-256 of the code with the PKCE challenge; single-use and 60 s '
  '(000 §1 rules 3-4).';
-- Serves: the sweep of expired codes.
create index federation_codes_expires_at_idx on private.federation_codes (expires_at);
alter table private.federation_codes enable row level security;

create table private.federation_jtis (
  client_id text not null references public.federation_clients (client_id) on delete cascade,
  jti text not null,
  expires_at timestamptz not null,
  constraint federation_jtis_pkey primary key (client_id, jti)
);
comment on table private.federation_jtis is
  'HMAC payload jtis already used (000 §2.4), kept until iat + 150 s, past which the iat window '
  'rejects the payload anyway.';
-- Serves: the sweep of expired jtis.
create index federation_jtis_expires_at_idx on private.federation_jtis (expires_at);
alter table private.federation_jtis enable row level security;

create table private.federation_rate_counters (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null default 0,
  constraint federation_rate_counters_pkey primary key (bucket, window_start)
);
comment on table private.federation_rate_counters is
  'Fixed one-minute windows per bucket (start|exchange x client|ip), 000 §8.';
-- Serves: the sweep of old windows.
create index federation_rate_counters_window_start_idx
  on private.federation_rate_counters (window_start);
alter table private.federation_rate_counters enable row level security;

create table private.federation_identities (
  client_id text not null references public.federation_clients (client_id) on delete cascade,
  partner_sub text not null,
  user_id uuid not null references auth.users (id) on delete cascade,
  provisioned boolean not null,
  created_at timestamptz not null default now(),
  constraint federation_identities_pkey primary key (client_id, partner_sub)
);
comment on table private.federation_identities is
  'Partner user (client_id, partner sub) -> auth user. Resolved first on every exchange, so a '
  'later e-mail change at the partner never moves the link (000 §4.5). provisioned = the broker '
  'created the account (clamped to capped_role); false = linked to an existing account.';
-- Serves: "is this account federated?" (linking refusals) and the role clamp trigger.
create index federation_identities_user_id_idx on private.federation_identities (user_id);
alter table private.federation_identities enable row level security;
