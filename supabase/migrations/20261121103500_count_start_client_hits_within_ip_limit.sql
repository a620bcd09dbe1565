-- 000 §7/§8, second review: a /start already refused by its IP's limit no longer counts against
-- the client's own bucket. Counting it let one address, hammering past its own 429s, fill the
-- client's per-minute budget and lock every other user of that partner out.

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
    'sealed_secret', encode(sealed, 'base64')));
end
$$;
