-- Issue 21: POST /rest/v1/rpc/revoke_proxy_bundle naming a bundle the caller cannot see (another
-- user's, or none) answered 500, PostgREST's status for SQLSTATE P0002. It is a client error and
-- must look like a row the caller cannot see: 404, the same for "not yours" and "does not exist".
create or replace function public.revoke_proxy_bundle(bundle_id uuid)
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
    -- PostgREST answers SQLSTATE PGRST with the status and body given here (its docs, "Raise
    -- errors with HTTP Status Codes").
    raise sqlstate 'PGRST' using
      message = json_build_object(
        'code', 'P0002', 'message', 'no such bundle',
        'details', 'No certificate bundle with this id is visible to the caller.',
        'hint', null)::text,
      detail = json_build_object('status', 404, 'headers', json_build_object())::text;
  end if;
end
$$;
comment on function public.revoke_proxy_bundle(uuid) is
  'Revokes a certificate bundle of the caller (or any, for an admin); 404 for one it cannot see.';
