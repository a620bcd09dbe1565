-- Onboarding (000 §4.5, §5): upsert_federation_client (with the one-time HMAC secret),
-- list_federation_clients and delete_federation_client. Each needs federation:edit and an admin
-- role, and confirm => true (the issue asks it of all three, 000 §5 of the writes).

-- Raises 42501 unless the caller holds federation:edit and an admin role (000 §5).
create function private.require_federation_admin()
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if not (public.has_capability('federation', 'edit') and private.is_admin()) then
    raise exception 'permission denied: federation:edit and an admin role are required'
      using errcode = '42501',
            hint = 'Ask an administrator; onboarding partners is an admin action.';
  end if;
end
$$;
revoke execute on function private.require_federation_admin() from public, anon;
grant execute on function private.require_federation_admin() to authenticated, service_role;

-- 000 §5: admin writes need an explicit confirm.
create function private.require_confirm(confirm boolean)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  if confirm is not true then
    raise exception 'confirm => true is required' using errcode = '22023';
  end if;
end
$$;
revoke execute on function private.require_confirm(boolean) from public, anon;
grant execute on function private.require_confirm(boolean) to authenticated, service_role;

-- The one public shape of a client record: never any secret material.
create function private.federation_client_json(client public.federation_clients)
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
    'enabled', client.enabled, 'start_limit_per_minute', client.start_limit_per_minute,
    'exchange_limit_per_minute', client.exchange_limit_per_minute,
    'ip_limit_per_minute', client.ip_limit_per_minute,
    'hmac_secret_minted_at', client.hmac_secret_minted_at,
    'created_at', client.created_at, 'updated_at', client.updated_at)
$$;
revoke execute on function private.federation_client_json(public.federation_clients)
  from public, anon;
grant execute on function private.federation_client_json(public.federation_clients)
  to authenticated, service_role;

-- Reference A7 item 16: a partner URL names a public host over https, so a record can never point
-- the broker (and the user's token) at loopback, private networks or the metadata address.
-- Loopback hosts are accepted, http included, for the local stack's stand-ins: the broker itself
-- refuses loopback and http on anything but a loopback stack (docs/federation.md).
create function private.is_acceptable_partner_url(url text)
returns boolean
language plpgsql
immutable
set search_path = ''
as $$
declare
  parts text[] := regexp_match(url,
    '^(https?)://(\[[0-9A-Fa-f:.]+\]|[^/?#@\s:\[\]]+)(:[0-9]+)?(/|$)');
  host text;
  address inet;
begin
  if url is null then
    return true;
  end if;
  if parts is null then
    return false;
  end if;
  host := lower(trim(both '[]' from parts[2]));
  begin
    address := host::inet;
  exception when others then
    address := null;
  end;
  if address is not null then
    if address <<= '127.0.0.0/8'::inet or address = '::1'::inet then
      return true;
    end if;
    return parts[1] = 'https' and not (
      address <<= any (array['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16',
        '172.16.0.0/12', '192.0.0.0/24', '192.168.0.0/16', '198.18.0.0/15', '224.0.0.0/3',
        '::/127', '::ffff:0:0/96', '64:ff9b::/96', 'fc00::/7', 'fe80::/10', 'ff00::/8']::inet[]));
  end if;
  if host = 'localhost' or host like '%.localhost' then
    return true;
  end if;
  -- Site-local names, a trailing dot, and numeric spellings of an address (2130706433, 0x7f.1)
  -- that URL parsers turn into IPv4.
  return parts[1] = 'https'
    and host !~ '(^|\.)(local|internal|localdomain|home\.arpa)$'
    and host !~ '\.$'
    and host !~ '(^|\.)(0x[0-9a-f]*|[0-9]+)$';
end
$$;
comment on function private.is_acceptable_partner_url(text) is
  'True when a backend_base_url / jwks_url is https to a public host (or names a loopback host, '
  'for local stand-ins). Reference A7 item 16.';
revoke execute on function private.is_acceptable_partner_url(text) from public, anon;
grant execute on function private.is_acceptable_partner_url(text) to authenticated, service_role;

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
  emails_verified_by_partner boolean default false
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
  if upsert_federation_client.verify_mode = 'hmac' and not mint_hmac_secret
     and (existing is null or existing.hmac_secret_minted_at is null) then
    raise exception 'an hmac client needs mint_hmac_secret => true when it is created'
      using errcode = '22023';
  end if;

  insert into public.federation_clients as c (
    client_id, client_name, verify_mode, backend_base_url, jwks_url, issuer, audience,
    capped_role, email_linking_trusted, enabled, start_limit_per_minute,
    exchange_limit_per_minute, ip_limit_per_minute, emails_verified_by_partner)
  values (
    upsert_federation_client.client_id, upsert_federation_client.client_name,
    upsert_federation_client.verify_mode, upsert_federation_client.backend_base_url,
    upsert_federation_client.jwks_url, upsert_federation_client.issuer,
    upsert_federation_client.audience, upsert_federation_client.capped_role,
    upsert_federation_client.email_linking_trusted, upsert_federation_client.enabled,
    upsert_federation_client.start_limit_per_minute,
    upsert_federation_client.exchange_limit_per_minute,
    upsert_federation_client.ip_limit_per_minute,
    upsert_federation_client.emails_verified_by_partner)
  on conflict on constraint federation_clients_pkey do update set
    client_name = excluded.client_name, backend_base_url = excluded.backend_base_url,
    jwks_url = excluded.jwks_url, issuer = excluded.issuer, audience = excluded.audience,
    capped_role = excluded.capped_role, email_linking_trusted = excluded.email_linking_trusted,
    enabled = excluded.enabled, start_limit_per_minute = excluded.start_limit_per_minute,
    exchange_limit_per_minute = excluded.exchange_limit_per_minute,
    ip_limit_per_minute = excluded.ip_limit_per_minute,
    emails_verified_by_partner = excluded.emails_verified_by_partner, updated_at = now()
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

-- Security invoker: the table's own policy already limits it to federation admins; the explicit
-- check turns "not allowed" into a 42501 instead of an empty list.
create function public.list_federation_clients(confirm boolean default false)
returns setof jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  perform private.require_federation_admin();
  perform private.require_confirm(confirm);
  return query
    select private.federation_client_json(c) from public.federation_clients c
    order by c.client_id;
end
$$;
comment on function public.list_federation_clients(boolean) is
  'Every federation client record, without secrets. Needs federation:edit, an admin role and '
  'confirm => true.';
revoke execute on function public.list_federation_clients(boolean) from public, anon;
grant execute on function public.list_federation_clients(boolean) to authenticated, service_role;

-- Security definer: API roles hold no delete privilege on federation_clients.
create function public.delete_federation_client(client_id text, confirm boolean default false)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
begin
  perform private.require_federation_admin();
  perform private.require_confirm(confirm);
  delete from public.federation_clients c where c.client_id = delete_federation_client.client_id;
  return found;
end
$$;
comment on function public.delete_federation_client(text, boolean) is
  'Removes a partner with its secret, codes and identity links (accounts stay). Needs '
  'federation:edit, an admin role and confirm => true. True when a client was deleted.';
revoke execute on function public.delete_federation_client(text, boolean) from public, anon;
grant execute on function public.delete_federation_client(text, boolean)
  to authenticated, service_role;
