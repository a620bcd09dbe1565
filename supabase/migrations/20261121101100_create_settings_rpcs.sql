-- expand_service_groups and effective_settings_for_device (001 §4.2).

-- Security invoker: RLS on service_groups already limits the union to groups the caller sees.
create function public.expand_service_groups(group_ids uuid[])
returns text[]
language plpgsql
stable
set search_path = ''
as $$
begin
  if group_ids is null then
    raise exception 'group_ids must be an array of service group ids' using errcode = '22004';
  end if;
  return (
    select coalesce(array_agg(distinct domain order by domain), '{}')
    from public.service_groups g, unnest(g.ssl_proxy_domains) as domain
    where g.id = any (group_ids));
end
$$;
comment on function public.expand_service_groups(uuid[]) is
  'Sorted union of ssl_proxy_domains over the given groups; groups the caller cannot see add '
  'nothing.';
revoke execute on function public.expand_service_groups(uuid[]) from public, anon;
grant execute on function public.expand_service_groups(uuid[]) to authenticated, service_role;

create function private.jsonb_deep_merge(base jsonb, override jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select case
    when jsonb_typeof(base) = 'object' and jsonb_typeof(override) = 'object' then
      coalesce((
        select jsonb_object_agg(k, case
          when base ? k and override ? k then private.jsonb_deep_merge(base -> k, override -> k)
          when override ? k then override -> k
          else base -> k end)
        from (select jsonb_object_keys(base) union select jsonb_object_keys(override)) as keys (k)
      ), '{}'::jsonb)
    else coalesce(override, base)
  end
$$;
comment on function private.jsonb_deep_merge(jsonb, jsonb) is
  'Objects merge key by key, recursively; anything else in override replaces base.';

create function private.jsonb_uuid_array(value jsonb)
returns uuid[]
language sql
immutable
set search_path = ''
as $$
  select coalesce(array_agg(e::uuid), '{}')
  from jsonb_array_elements_text(case when jsonb_typeof(value) = 'array' then value else '[]' end) e
  where e ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
$$;

-- Security definer: a device token must read its device's settings without holding the owner's
-- settings:view, and the global settings row is read whatever the caller's RLS says.
create function public.effective_settings_for_device(target_uuid uuid)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  device_claim text := auth.jwt() ->> 'device_uuid';
  device_owner uuid;
  global_data jsonb;
  device_data jsonb;
  merged jsonb;
  group_ids uuid[];
  domains text[];
begin
  if target_uuid is null then
    raise exception 'target_uuid is required' using errcode = '22004';
  end if;
  select d.owner_user_id into device_owner from public.devices d where d.uuid = target_uuid;

  -- 001 §4.2: a device may only ask for its own uuid. A device token is its owner's token
  -- narrowed to one device, so the owner's capability and ownership still apply.
  if device_claim is not null and device_claim is distinct from target_uuid::text then
    raise exception 'a device token may read only its own settings' using errcode = '42501';
  end if;
  if not public.has_capability('settings', 'view') then
    raise exception 'permission denied: capability settings:view required'
      using errcode = '42501';
  end if;
  if device_owner is distinct from auth.uid()
     and (device_claim is not null or not private.is_admin()) then
    device_owner := null;
  end if;
  if device_owner is null then
    raise sqlstate 'PT404' using message = 'device not found',
      detail = format('No device %s that you may see.', target_uuid);
  end if;

  select s.data into global_data from public.settings_global s where s.id = 1;
  select s.data into device_data from public.settings_device s where s.device_uuid = target_uuid;
  merged := private.jsonb_deep_merge(coalesce(global_data, '{}'), coalesce(device_data, '{}'));

  -- Groups named by the device's own settings expand only if its owner owns them; groups named
  -- by the global settings were chosen by an admin and expand for everyone.
  group_ids := private.jsonb_uuid_array(merged -> 'service_groups');
  select coalesce(array_agg(distinct domain order by domain), '{}') into domains
  from (
    select jsonb_array_elements_text(case when jsonb_typeof(merged -> 'ssl_proxy_domains') = 'array'
      then merged -> 'ssl_proxy_domains' else '[]' end)
    union all
    select unnest(g.ssl_proxy_domains)
    from public.service_groups g
    where g.id = any (group_ids)
      and (not coalesce(device_data ? 'service_groups', false) or g.owner_user_id = device_owner)
  ) as all_domains (domain);

  return merged || jsonb_build_object(
    'device_uuid', target_uuid,
    'service_groups', to_jsonb(group_ids),
    'ssl_proxy_domains', to_jsonb(domains));
end
$$;
comment on function public.effective_settings_for_device(uuid) is
  'Global settings deep-merged with the device''s overrides (device wins), with ssl_proxy_domains '
  'the sorted union of the merged list and the domains of the merged service_groups. A device '
  'token (JWT claim device_uuid) may ask only for its own uuid; a user needs settings:view and '
  'a device they may see (404 PT404 otherwise).';
revoke execute on function public.effective_settings_for_device(uuid) from public, anon;
grant execute on function public.effective_settings_for_device(uuid) to authenticated, service_role;
