-- The capture proxy's device plumbing (002 §2.3, §4.4, §5): certificate bundles (the project CA
-- plus /allocate credentials, issued to users with devices:edit, the secret stored only as a
-- SHA-256 hash), one dedicated port per device uuid (stable across restarts and daemons: one
-- row per uuid, one uuid per port, allocation serialized by an advisory lock), and the CA
-- certificate the proxy registers so a bundle can carry it.

-- The project CA's certificate (public part only; the key never leaves the proxy's disk).
create table private.proxy_ca (
  id smallint primary key default 1,
  cert_pem text not null,
  fingerprint_sha256 text not null,
  registered_at timestamptz not null default now(),
  constraint proxy_ca_single_row check (id = 1),
  constraint proxy_ca_pem_check check (cert_pem like '-----BEGIN CERTIFICATE-----%')
);
comment on table private.proxy_ca is
  'The CA the capture proxy signs interception leaves with; one per deployment (every daemon '
  'must load the same CA, or devices would trust only some of them).';

create table public.proxy_bundles (
  id uuid primary key default gen_random_uuid(),
  owner_user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
  label text not null,
  secret_sha256 bytea not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  constraint proxy_bundles_label_check check (char_length(btrim(label)) between 1 and 100),
  constraint proxy_bundles_secret_check check (octet_length(secret_sha256) = 32)
);
comment on table public.proxy_bundles is
  'Certificate bundles: /allocate credentials (username = id, password shown once by '
  'issue_proxy_bundle). Only the SHA-256 of the password is kept, and no API role may read it.';
-- Serves: "my bundles" listings and the owner filter of the policies.
create index proxy_bundles_owner_user_id_idx on public.proxy_bundles (owner_user_id);

create table public.device_ports (
  device_uuid uuid primary key references public.devices (uuid) on delete cascade,
  port integer not null unique,
  bundle_id uuid references public.proxy_bundles (id) on delete set null,
  allocated_at timestamptz not null default now(),
  constraint device_ports_port_check check (port between 1024 and 65535)
);
comment on table public.device_ports is
  'The dedicated proxy port of each device (002 §2.3): the same uuid always gets the same port. '
  'Written only by the proxy''s /allocate (service role); the PAC URL is '
  'http://<port>.<proxy_domain>/.';

alter table private.proxy_ca enable row level security;
alter table public.proxy_bundles enable row level security;
alter table public.device_ports enable row level security;
revoke all on private.proxy_ca, public.proxy_bundles, public.device_ports from anon, authenticated;
-- Columns, not the table: the secret's hash is readable by no API role (not even its owner).
grant select (id, owner_user_id, label, created_at, last_used_at, revoked_at)
  on public.proxy_bundles to authenticated;
grant select on public.device_ports to authenticated;

create policy proxy_bundles_select on public.proxy_bundles for select to authenticated
  using ((select public.has_capability('devices', 'view'))
    and (owner_user_id = (select auth.uid()) or (select private.is_admin())));
create policy device_ports_select on public.device_ports for select to authenticated
  using ((select public.has_capability('devices', 'view'))
    and (device_uuid = any ((select private.owned_device_uuids())::uuid[])
      or (select private.is_admin())));

-- Issues a bundle to the caller (devices:edit): the password is returned here once and never
-- again. Security definer because the caller may not insert the hash column directly.
create function public.issue_proxy_bundle(label text default 'device bundle')
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  caller uuid := auth.uid();
  secret text := translate(encode(extensions.gen_random_bytes(32), 'base64'), '+/=', '-_');
  bundle_id uuid;
  ca record;
begin
  if caller is null then
    raise exception 'sign in to get a certificate bundle' using errcode = '42501';
  end if;
  if not public.has_capability('devices', 'edit') then
    raise exception 'permission denied: devices:edit is required to get a certificate bundle'
      using errcode = '42501';
  end if;
  if label is null or char_length(btrim(label)) not between 1 and 100 then
    raise exception 'label must be 1 to 100 characters' using errcode = '22023';
  end if;
  select c.cert_pem, c.fingerprint_sha256 into ca from private.proxy_ca c where c.id = 1;
  if not found then
    raise exception 'the capture proxy has not registered its CA yet; start the proxy first'
      using errcode = '55000';
  end if;
  insert into public.proxy_bundles (owner_user_id, label, secret_sha256)
  values (caller, btrim(label), extensions.digest(secret, 'sha256'))
  returning id into bundle_id;
  return jsonb_build_object(
    'bundle_id', bundle_id,
    'username', bundle_id,
    'password', secret,
    'ca_certificate', ca.cert_pem,
    'ca_fingerprint_sha256', ca.fingerprint_sha256);
end
$$;
comment on function public.issue_proxy_bundle(text) is
  'A certificate bundle for the caller (devices:edit): the CA certificate and /allocate basic-auth '
  'credentials. The password is shown only in this response.';
grant execute on function public.issue_proxy_bundle(text) to authenticated;

-- Revoking is final; a revoked bundle's credentials get 401 from /allocate.
create function public.revoke_proxy_bundle(bundle_id uuid)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if not public.has_capability('devices', 'edit') then
    raise exception 'permission denied: devices:edit is required' using errcode = '42501';
  end if;
  update public.proxy_bundles b set revoked_at = coalesce(b.revoked_at, now())
  where b.id = bundle_id and (b.owner_user_id = auth.uid() or private.is_admin());
  if not found then
    raise exception 'no such bundle' using errcode = 'P0002';
  end if;
end
$$;
grant execute on function public.revoke_proxy_bundle(uuid) to authenticated;

-- The proxy registers its CA at start. A different CA already registered is refused: devices
-- trust that one, and every daemon of a deployment must serve the same.
create function private.register_proxy_ca(cert_pem text, fingerprint_sha256 text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  registered text;
begin
  select c.fingerprint_sha256 into registered from private.proxy_ca c where c.id = 1 for update;
  if registered is null then
    insert into private.proxy_ca (cert_pem, fingerprint_sha256) values (cert_pem, fingerprint_sha256);
  elsif registered <> fingerprint_sha256 then
    raise exception 'another CA (%) is registered for this deployment', registered
      using errcode = '23505',
            hint = 'copy that CA''s ca.pem and ca.key to this proxy, or delete private.proxy_ca to switch';
  end if;
end
$$;
grant execute on function private.register_proxy_ca(text, text) to service_role;

-- /allocate (002 §4.4), called by the proxy as the service role with the basic-auth credentials
-- it received. Returns nothing for bad credentials (the proxy answers 401 and nothing is
-- recorded). Otherwise records the device for the bundle's owner (renaming keeps the port) and
-- returns its port: the existing one, or the lowest free port of the pool that the calling
-- daemon has not found taken on its host (avoid_ports), with `created` telling which. One account
-- holds at most per_owner_limit ports, so it cannot drain the pool for everyone else. The
-- advisory lock serializes allocation across daemons, so no race hands out one port twice or two
-- ports to one uuid.
create function private.allocate_device_port(
  bundle_id uuid,
  secret text,
  device_uuid uuid,
  device_name text,
  country text,
  client_ip inet,
  pool_start integer,
  pool_end integer,
  avoid_ports integer[] default '{}',
  per_owner_limit integer default 100)
returns table (port integer, owner_user_id uuid, created boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
  fn_bundle record;
  existing_owner uuid;
  chosen integer;
begin
  select b.id, b.owner_user_id into fn_bundle
  from public.proxy_bundles b
  where b.id = allocate_device_port.bundle_id and b.revoked_at is null
    and b.secret_sha256 = extensions.digest(allocate_device_port.secret, 'sha256');
  if not found then
    return;
  end if;
  perform pg_advisory_xact_lock(hashtext('private.allocate_device_port'));
  select d.owner_user_id into existing_owner
  from public.devices d where d.uuid = allocate_device_port.device_uuid;
  if existing_owner is not null and existing_owner <> fn_bundle.owner_user_id then
    raise exception 'device % belongs to another account', allocate_device_port.device_uuid
      using errcode = '42501';
  end if;
  insert into public.devices as d (uuid, name, country, owner_user_id)
  values (allocate_device_port.device_uuid, allocate_device_port.device_name,
          upper(allocate_device_port.country), fn_bundle.owner_user_id)
  on conflict (uuid) do update
    set name = excluded.name, country = coalesce(excluded.country, d.country);
  insert into public.device_status as s (device_uuid, ip, source)
  values (allocate_device_port.device_uuid, allocate_device_port.client_ip, 'pac')
  on conflict (device_uuid) do update set ip = excluded.ip, updated_at = now();
  select p.port into chosen
  from public.device_ports p where p.device_uuid = allocate_device_port.device_uuid;
  if chosen is not null then
    update public.proxy_bundles b set last_used_at = now() where b.id = fn_bundle.id;
    return query select chosen, fn_bundle.owner_user_id, false;
    return;
  end if;
  if (select count(*) from public.device_ports p join public.devices d on d.uuid = p.device_uuid
      where d.owner_user_id = fn_bundle.owner_user_id) >= allocate_device_port.per_owner_limit then
    raise exception 'this account already holds % device ports', allocate_device_port.per_owner_limit
      using errcode = '54000';
  end if;
  select candidate into chosen
  from generate_series(allocate_device_port.pool_start, allocate_device_port.pool_end) as candidate
  where not exists (select 1 from public.device_ports p where p.port = candidate)
    and candidate <> all (allocate_device_port.avoid_ports)
  order by candidate
  limit 1;
  if chosen is null then
    raise exception 'the device port pool %-% is exhausted',
      allocate_device_port.pool_start, allocate_device_port.pool_end
      using errcode = '53400';
  end if;
  insert into public.device_ports (device_uuid, port, bundle_id)
  values (allocate_device_port.device_uuid, chosen, fn_bundle.id);
  update public.proxy_bundles b set last_used_at = now() where b.id = fn_bundle.id;
  return query select chosen, fn_bundle.owner_user_id, true;
end
$$;
grant execute on function private.allocate_device_port(uuid, text, uuid, text, text, inet, integer, integer, integer[], integer)
  to service_role;

-- Gives back a port the proxy just allocated but could not open on its host (taken by another
-- program), so the next attempt can pick another; only while it is still that device's port.
create function private.release_device_port(device_uuid uuid, port integer)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  delete from public.device_ports p
  where p.device_uuid = release_device_port.device_uuid and p.port = release_device_port.port
$$;
grant execute on function private.release_device_port(uuid, integer) to service_role;
