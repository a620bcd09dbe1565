-- HMAC assertions bound to the PKCE challenge (issue 20, reference A2): a client onboarded with
-- hmac_binds_challenge => true accepts only payloads that also carry code_challenge, equal to the
-- /start request's, so an assertion leaked from the partner's backend (logs, a proxy) is useless
-- with any PKCE pair but the one it was signed for, whose verifier the thief does not hold.
-- Default false: spec 000 §2.4's four-field payload keeps working for clients not so onboarded.

alter table public.federation_clients
  add column hmac_binds_challenge boolean not null default false,
  add constraint federation_clients_hmac_binds_challenge_check
    check (verify_mode = 'hmac' or not hmac_binds_challenge);
comment on column public.federation_clients.hmac_binds_challenge is
  'verify_mode hmac: the signed payload must carry code_challenge equal to the /start request''s '
  '(issue 20). Recommended for every hmac client.';

-- The one public shape of a client record, now with the flag (still never any secret material).
create or replace function private.federation_client_json(client public.federation_clients)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object(
    'client_id', client.client_id, 'client_name', client.client_name,
    'verify_mode', client.verify_mode, 'backend_base_url', client.backend_base_url,
    'jwks_url', client.jwks_url, 'issuer', client.issuer, 'audience', client.audience,
    'capped_role', client.capped_role, 'email_linking_trusted', client.email_linking_trusted,
    'emails_verified_by_partner', client.emails_verified_by_partner,
    'hmac_binds_challenge', client.hmac_binds_challenge,
    'enabled', client.enabled, 'start_limit_per_minute', client.start_limit_per_minute,
    'exchange_limit_per_minute', client.exchange_limit_per_minute,
    'ip_limit_per_minute', client.ip_limit_per_minute,
    'hmac_secret_minted_at', client.hmac_secret_minted_at,
    'created_at', client.created_at, 'updated_at', client.updated_at)
$$;

-- upsert_federation_client gains the argument (a new signature: the old one is dropped so
-- PostgREST sees one function). Its body is 20261121103200's apart from the flag.
drop function public.upsert_federation_client(text, text, text, text, boolean, text, text, text,
  text, boolean, boolean, boolean, integer, integer, integer, boolean);

-- Security definer: writes federation_clients (no API write privilege) and the private sealed
-- secret, after its own federation:edit + admin + confirm checks.
create function public.upsert_federation_client(
  client_id text,
  client_name text,
  verify_mode text,
  capped_role text,
  confirm boolean default false,
  backend_base_url text default null,
  jwks_url text default null,
  issuer text default null,
  audience text default null,
  email_linking_trusted boolean default false,
  enabled boolean default true,
  mint_hmac_secret boolean default false,
  start_limit_per_minute integer default 600,
  exchange_limit_per_minute integer default 600,
  ip_limit_per_minute integer default 60,
  emails_verified_by_partner boolean default false,
  hmac_binds_challenge boolean default false
)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  existing public.federation_clients;
  saved public.federation_clients;
  sealing_key bytea;
  secret text;
begin
  perform private.require_federation_admin();
  perform private.require_confirm(confirm);
  -- 000 §4.5 rule 4 is a least-privilege clamp: an admin role would defeat it.
  if not exists (select 1 from public.roles r
                 where r.slug = upsert_federation_client.capped_role and not r.is_admin) then
    raise exception 'capped_role must name an existing non-admin role' using errcode = '22023';
  end if;
  select * into existing from public.federation_clients c
  where c.client_id = upsert_federation_client.client_id for update;
  -- 000 §2.2: verify_mode is set once at onboarding.
  if found and existing.verify_mode <> upsert_federation_client.verify_mode then
    raise exception 'verify_mode is set once; delete and re-onboard the client to change it'
      using errcode = '22023';
  end if;
  if not (private.is_acceptable_partner_url(upsert_federation_client.backend_base_url)
          and private.is_acceptable_partner_url(upsert_federation_client.jwks_url)) then
    raise exception 'backend_base_url and jwks_url must be https URLs of a public host'
      using errcode = '22023';
  end if;
  if mint_hmac_secret and upsert_federation_client.verify_mode <> 'hmac' then
    raise exception 'mint_hmac_secret applies to verify_mode hmac only' using errcode = '22023';
  end if;
  if hmac_binds_challenge and upsert_federation_client.verify_mode <> 'hmac' then
    raise exception 'hmac_binds_challenge applies to verify_mode hmac only' using errcode = '22023';
  end if;
  if upsert_federation_client.verify_mode = 'hmac' and not mint_hmac_secret
     and (existing is null or existing.hmac_secret_minted_at is null) then
    raise exception 'an hmac client needs mint_hmac_secret => true when it is created'
      using errcode = '22023';
  end if;

  insert into public.federation_clients as c (
    client_id, client_name, verify_mode, backend_base_url, jwks_url, issuer, audience,
    capped_role, email_linking_trusted, enabled, start_limit_per_minute,
    exchange_limit_per_minute, ip_limit_per_minute, emails_verified_by_partner,
    hmac_binds_challenge)
  values (
    upsert_federation_client.client_id, upsert_federation_client.client_name,
    upsert_federation_client.verify_mode, upsert_federation_client.backend_base_url,
    upsert_federation_client.jwks_url, upsert_federation_client.issuer,
    upsert_federation_client.audience, upsert_federation_client.capped_role,
    upsert_federation_client.email_linking_trusted, upsert_federation_client.enabled,
    upsert_federation_client.start_limit_per_minute,
    upsert_federation_client.exchange_limit_per_minute,
    upsert_federation_client.ip_limit_per_minute,
    upsert_federation_client.emails_verified_by_partner,
    coalesce(upsert_federation_client.hmac_binds_challenge, false))
  on conflict on constraint federation_clients_pkey do update set
    client_name = excluded.client_name, backend_base_url = excluded.backend_base_url,
    jwks_url = excluded.jwks_url, issuer = excluded.issuer, audience = excluded.audience,
    capped_role = excluded.capped_role, email_linking_trusted = excluded.email_linking_trusted,
    enabled = excluded.enabled, start_limit_per_minute = excluded.start_limit_per_minute,
    exchange_limit_per_minute = excluded.exchange_limit_per_minute,
    ip_limit_per_minute = excluded.ip_limit_per_minute,
    emails_verified_by_partner = excluded.emails_verified_by_partner,
    hmac_binds_challenge = excluded.hmac_binds_challenge, updated_at = now()
  returning * into saved;

  if mint_hmac_secret then
    select k.public_key into sealing_key from private.federation_sealing_key k where k.id = 1;
    if sealing_key is null then
      raise exception 'the federation sealing key is not configured'
        using errcode = '55000', hint = 'See docs/federation.md, "Secret storage".';
    end if;
    -- 256 random bits, base64url without padding (43 characters); the HMAC key is its ASCII bytes.
    secret := translate(rtrim(encode(extensions.gen_random_bytes(32), 'base64'), '='), '+/', '-_');
    insert into private.federation_client_secrets as s (client_id, sealed_secret)
    values (saved.client_id,
            extensions.pgp_pub_encrypt_bytea(convert_to(secret, 'UTF8'), sealing_key))
    on conflict on constraint federation_client_secrets_pkey do update set
      sealed_secret = excluded.sealed_secret,
      minted_at = now();
    update public.federation_clients c set hmac_secret_minted_at = now()
    where c.client_id = saved.client_id returning * into saved;
    return private.federation_client_json(saved) || jsonb_build_object('hmac_secret', secret);
  end if;
  return private.federation_client_json(saved);
end
$$;
comment on function public.upsert_federation_client is
  'Onboards or updates a partner (000 §4.5). Needs federation:edit, an admin role and '
  'confirm => true. With mint_hmac_secret the answer carries hmac_secret: the only time it is '
  'ever shown.';
revoke execute on function public.upsert_federation_client from public, anon;
grant execute on function public.upsert_federation_client to authenticated, service_role;

-- The broker reads the flag with the client's other verification settings (same signature).
-- Security definer: reads the client record and its sealed secret and writes the counters.
create or replace function public.federation_broker_begin_start(client_id text, client_ip text,
                                                     at timestamptz default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  t timestamptz := coalesce(at, now());
  client public.federation_clients;
  sealed bytea;
begin
  -- 000 §2.2: a disabled client answers exactly like an unknown one, so it is not even read:
  -- its own thresholds and buckets would tell the two apart by when 429 starts.
  select * into client from public.federation_clients c
  where c.client_id = federation_broker_begin_start.client_id and c.enabled;
  -- 000 §7: per IP first (per client; requests naming unknown clients share one IP bucket), and
  -- only a request the IP limit lets through is counted against the client, so a single
  -- address cannot use up a partner's budget.
  if not private.federation_hit(
       'start:ip:' || coalesce(client.client_id, '?') || ':' || client_ip,
       coalesce(client.ip_limit_per_minute, private.federation_default_limit('ip')), t)
     or not private.federation_hit('start:client:' || federation_broker_begin_start.client_id,
       coalesce(client.start_limit_per_minute, private.federation_default_limit('client')), t)
  then
    return jsonb_build_object('status', 'rate_limited');
  end if;
  if client.client_id is null then
    return jsonb_build_object('status', 'unknown_client');
  end if;
  select s.sealed_secret into sealed from private.federation_client_secrets s
  where s.client_id = client.client_id;
  return jsonb_build_object('status', 'ok', 'client', jsonb_build_object(
    'client_id', client.client_id, 'verify_mode', client.verify_mode,
    'backend_base_url', client.backend_base_url, 'jwks_url', client.jwks_url,
    'issuer', client.issuer, 'audience', client.audience,
    'emails_verified_by_partner', client.emails_verified_by_partner,
    'hmac_binds_challenge', client.hmac_binds_challenge,
    'sealed_secret', encode(sealed, 'base64')));
end
$$;
