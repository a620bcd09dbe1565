-- The service-role RPCs the federation-broker edge function calls: begin /start (rate limits and
-- the client's verification settings), issue a code (with jti single use), consume a code
-- atomically (000 §1 rules 3-4) and bind a partner identity to an account (000 §4.5).
-- `at` is the broker's clock: now() in production, an injected time only in local tests.

-- Counts one request in bucket's current one-minute window; true while within per_minute.
create function private.federation_hit(bucket text, per_minute integer, at timestamptz)
returns boolean
language sql
volatile
set search_path = ''
as $$
  insert into private.federation_rate_counters as c (bucket, window_start, hits)
  values (bucket, to_timestamp(floor(extract(epoch from at) / 60) * 60), 1)
  on conflict on constraint federation_rate_counters_pkey do update set hits = c.hits + 1
  returning hits <= per_minute
$$;
revoke execute on function private.federation_hit(text, integer, timestamptz) from public, anon,
  authenticated;

-- Limits for requests whose client is not known (unknown client_id, unknown code).
create function private.federation_default_limit(kind text)
returns integer
language sql
immutable
set search_path = ''
as $$ select case kind when 'ip' then 60 else 600 end $$;
revoke execute on function private.federation_default_limit(text) from public, anon,
  authenticated;

-- Security definer: reads the client record and its sealed secret and writes the counters, none
-- of which the service role may touch directly. A /start refused by its IP's limit is not
-- counted against the client's own bucket (000 §7/§8): otherwise one address, hammering past its
-- own 429s, would fill the client's per-minute budget and lock every other user of it out.
create function public.federation_broker_begin_start(client_id text, client_ip text,
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
comment on function public.federation_broker_begin_start(text, text, timestamptz) is
  'Broker only: counts a /start against the per-IP and per-client limits and returns the '
  'client''s verification settings (status ok | rate_limited | unknown_client).';
revoke execute on function public.federation_broker_begin_start(text, text, timestamptz)
  from public, anon, authenticated;
grant execute on function public.federation_broker_begin_start(text, text, timestamptz)
  to service_role;

-- Security definer: writes the private code and jti tables.
create function public.federation_broker_issue_code(
  client_id text, code_hash text, code_challenge text, partner_sub text,
  partner_email text default null, email_normalized text default null, jti text default null,
  jti_expires_at timestamptz default null, at timestamptz default null)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
  t timestamptz := coalesce(at, now());
begin
  -- 000 §2.4: a jti is accepted once per client; the insert is the check.
  if jti is not null then
    insert into private.federation_jtis as j (client_id, jti, expires_at)
    values (federation_broker_issue_code.client_id, federation_broker_issue_code.jti,
            coalesce(jti_expires_at, t + interval '150 seconds'))
    on conflict on constraint federation_jtis_pkey do nothing;
    if not found then
      return 'replayed';
    end if;
  end if;
  -- 000 §2.3: 60 s lifetime, bound to the challenge; only the code's hash is kept.
  insert into private.federation_codes (code_hash, client_id, code_challenge, partner_sub,
    partner_email, email_normalized, expires_at, created_at)
  values (decode(code_hash, 'hex'), federation_broker_issue_code.client_id, code_challenge,
          partner_sub, partner_email, email_normalized, t + interval '60 seconds', t);
  return 'issued';
end
$$;
comment on function public.federation_broker_issue_code is
  'Broker only: records a verified hand-off as a 60 s code (hash only) and burns the HMAC jti; '
  'answers issued | replayed.';
revoke execute on function public.federation_broker_issue_code from public, anon, authenticated;
grant execute on function public.federation_broker_issue_code to service_role;

-- Re-applies 000 §4.5 rule 4 to an account the broker provisioned: its only app role is the
-- client's capped_role.
create function private.clamp_federated_user(user_id uuid, capped_role text)
returns void
language sql
volatile
set search_path = ''
as $$
  delete from public.user_roles ur
  where ur.user_id = clamp_federated_user.user_id
    and ur.role_id <> (select r.id from public.roles r where r.slug = capped_role);
  insert into public.user_roles (user_id, role_id, granted_by)
  select clamp_federated_user.user_id, r.id, null from public.roles r where r.slug = capped_role
  on conflict on constraint user_roles_pkey do nothing;
$$;
revoke execute on function private.clamp_federated_user(uuid, text) from public, anon,
  authenticated;

-- What the broker needs to pick an account for the partner user (000 §4.5).
create function private.federation_account_facts(client_id text, partner_sub text,
                                                 email_normalized text)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object(
    'mapped', (
      select jsonb_build_object('user_id', u.id, 'email', u.email, 'provisioned', i.provisioned)
      from private.federation_identities i join auth.users u on u.id = i.user_id
      where i.client_id = federation_account_facts.client_id
        and i.partner_sub = federation_account_facts.partner_sub),
    'collision', (
      select jsonb_build_object('user_id', u.id, 'email', u.email,
        -- Rule 3: never an admin, never a federated account, never an unconfirmed address
        -- (the pre-hijack of an account the real owner never verified).
        'linkable', u.email_confirmed_at is not null
          and not exists (select 1 from public.user_roles ur join public.roles r on r.id = ur.role_id
                          where ur.user_id = u.id and r.is_admin)
          and not exists (select 1 from private.federation_identities i where i.user_id = u.id))
      from auth.users u
      where email_normalized is not null and lower(u.email) = email_normalized
      order by u.created_at limit 1))
$$;
revoke execute on function private.federation_account_facts(text, text, text) from public, anon,
  authenticated;

-- Security definer: reads and consumes private codes, counts rate limits, reads auth.users.
create function public.federation_broker_consume_code(code_hash text, code_challenge text,
                                                     client_ip text, at timestamptz default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  t timestamptz := coalesce(at, now());
  code private.federation_codes;
  client public.federation_clients;
  facts jsonb;
begin
  select * into code from private.federation_codes c
  where c.code_hash = decode(federation_broker_consume_code.code_hash, 'hex');
  select * into client from public.federation_clients c where c.client_id = code.client_id;
  -- Per IP and client, as at /start; unknown codes share one bucket per IP.
  if not private.federation_hit('exchange:ip:' || coalesce(client.client_id, '?') || ':' || client_ip,
       coalesce(client.ip_limit_per_minute, private.federation_default_limit('ip')), t) then
    return jsonb_build_object('status', 'rate_limited');
  end if;
  -- 000 §7: used, expired and unknown are one answer. The kill switch (000 §2.2) also stops
  -- codes its client issued in the last 60 s, so disabling a leaked partner takes effect at once.
  if code.code_hash is null or code.consumed_at is not null or code.expires_at <= t
     or not client.enabled then
    return jsonb_build_object('status', 'gone');
  end if;
  if not private.federation_hit('exchange:client:' || client.client_id,
       client.exchange_limit_per_minute, t) then
    return jsonb_build_object('status', 'rate_limited');
  end if;
  -- 000 §3: a wrong verifier leaves the code issued; five wrong ones burn it.
  if code.code_challenge <> federation_broker_consume_code.code_challenge then
    update private.federation_codes c
    set failed_attempts = c.failed_attempts + 1,
        consumed_at = case when c.failed_attempts + 1 >= 5 then t end
    where c.code_hash = code.code_hash and c.consumed_at is null;
    return jsonb_build_object('status', 'mismatch');
  end if;
  -- 000 §1 rule 4: one atomic update consumes the code. Under READ COMMITTED a concurrent
  -- second update waits, re-checks consumed_at is null against the committed row and matches
  -- nothing.
  update private.federation_codes c set consumed_at = t
  where c.code_hash = code.code_hash and c.consumed_at is null and c.expires_at > t
    and c.code_challenge = federation_broker_consume_code.code_challenge;
  if not found then
    return jsonb_build_object('status', 'gone');
  end if;
  -- 000 §4.5 rule 3 holds for the life of a link, not only when it is made: an account linked
  -- while it was not an admin is unlinked once it is one, and the partner user gets a fresh
  -- account (rule 2) instead of the admin's.
  delete from private.federation_identities i
  where i.client_id = code.client_id and i.partner_sub = code.partner_sub and not i.provisioned
    and exists (select 1 from public.user_roles ur join public.roles r on r.id = ur.role_id
                where ur.user_id = i.user_id and r.is_admin);
  facts := private.federation_account_facts(code.client_id, code.partner_sub,
                                            code.email_normalized);
  if (facts -> 'mapped' ->> 'provisioned')::boolean then
    perform private.clamp_federated_user((facts -> 'mapped' ->> 'user_id')::uuid,
                                         client.capped_role);
  end if;
  return jsonb_build_object('status', 'consumed', 'client_id', client.client_id,
    'capped_role', client.capped_role, 'email_linking_trusted', client.email_linking_trusted,
    'partner_sub', code.partner_sub, 'partner_email', code.partner_email,
    'email_normalized', code.email_normalized) || facts;
end
$$;
comment on function public.federation_broker_consume_code(text, text, text, timestamptz) is
  'Broker only: counts an /exchange, then consumes the code when the challenge matches; status '
  'consumed (with the facts to pick the account) | mismatch | gone | rate_limited.';
revoke execute on function public.federation_broker_consume_code(text, text, text, timestamptz)
  from public, anon, authenticated;
grant execute on function public.federation_broker_consume_code(text, text, text, timestamptz)
  to service_role;

-- Security definer: writes private identities and clamps user_roles for the broker. The linking
-- refusals of 000 §4.5 rule 3 are checked again here, under a lock on the account: the broker
-- reads the facts at consume time and binds later, so two trusted hand-offs (two partners, or two
-- subs of one) could otherwise both link one account, or a link could land on an account that
-- became an admin or another partner's in between.
create function public.federation_broker_bind_identity(client_id text, partner_sub text,
                                                       user_id uuid, provisioned boolean)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  bound private.federation_identities;
  capped text;
begin
  select * into bound from private.federation_identities i
  where i.client_id = federation_broker_bind_identity.client_id
    and i.partner_sub = federation_broker_bind_identity.partner_sub;
  if not found then
    if not federation_broker_bind_identity.provisioned then
      -- Serializes links to one account: a second binder waits here, then sees the first link.
      perform 1 from auth.users u where u.id = federation_broker_bind_identity.user_id
      for no key update;
      if not exists (
           select 1 from auth.users u
           where u.id = federation_broker_bind_identity.user_id
             and u.email_confirmed_at is not null)
         or exists (
           select 1 from public.user_roles ur join public.roles r on r.id = ur.role_id
           where ur.user_id = federation_broker_bind_identity.user_id and r.is_admin)
         or exists (
           select 1 from private.federation_identities i
           where i.user_id = federation_broker_bind_identity.user_id)
      then
        -- The broker falls back to a fresh account (rule 2).
        return jsonb_build_object('refused', true);
      end if;
    end if;
    -- Two first hand-offs of one partner user may race: the first binding wins, the loser's
    -- freshly made account is deleted by the broker.
    insert into private.federation_identities as i (client_id, partner_sub, user_id, provisioned)
    values (federation_broker_bind_identity.client_id, federation_broker_bind_identity.partner_sub,
            federation_broker_bind_identity.user_id, federation_broker_bind_identity.provisioned)
    on conflict on constraint federation_identities_pkey do nothing;
    select * into bound from private.federation_identities i
    where i.client_id = federation_broker_bind_identity.client_id
      and i.partner_sub = federation_broker_bind_identity.partner_sub;
  end if;
  if bound.provisioned then
    select c.capped_role into capped from public.federation_clients c
    where c.client_id = bound.client_id;
    perform private.clamp_federated_user(bound.user_id, capped);
  end if;
  return jsonb_build_object('refused', false, 'user_id', bound.user_id,
    'provisioned', bound.provisioned,
    'email', (select u.email from auth.users u where u.id = bound.user_id));
end
$$;
comment on function public.federation_broker_bind_identity(text, text, uuid, boolean) is
  'Broker only: maps (client_id, partner sub) to an account (first binding wins) and clamps a '
  'provisioned account to the client''s capped_role; returns the bound account, or '
  'refused = true when a link (provisioned = false) would break 000 §4.5 rule 3.';
revoke execute on function public.federation_broker_bind_identity(text, text, uuid, boolean)
  from public, anon, authenticated;
grant execute on function public.federation_broker_bind_identity(text, text, uuid, boolean)
  to service_role;
