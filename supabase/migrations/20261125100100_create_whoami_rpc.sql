-- whoami(): the caller resolved to user, roles and capabilities (001 §5.4). Edge functions call it
-- over PostgREST with the caller's token in both headers (001 §5.3), so the pre-request hook
-- refuses a revoked jti before it runs: hosted verify_jwt checks only the signature.

-- Security definer: the answer is about the caller, but a member may not read public.roles
-- (users:view) nor auth.users; it reads only the caller's own rows (auth.uid()).
create function public.whoami()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  caller uuid := auth.uid();
  claims jsonb := coalesce(auth.jwt(), '{}'::jsonb);
  account_email text;
  role_list jsonb;
  admin boolean;
  capability_list jsonb;
  token_client_id text;
  token_label text;
begin
  -- The same refusal as the pre-request hook, for callers that reach this function without it
  -- (SQL, a deployment whose hook is not configured): a revoked token learns nothing.
  perform private.refuse_revoked_token();

  select u.email::text into account_email
  from auth.users u
  where u.id = caller and u.deleted_at is null;
  if not found then
    -- A signed token whose subject is no (longer a) user identifies no caller: 401, like a bad JWT.
    raise sqlstate 'PGRST' using
      message = json_build_object(
        'code', 'PGRST301', 'message', 'JWT names no user',
        'details', 'The token''s subject is not a user of this project; sign in again.',
        'hint', null)::text,
      detail = json_build_object(
        'status', 401,
        'headers', json_build_object(
          'WWW-Authenticate',
          'Bearer error="invalid_token", error_description="JWT names no user"'))::text;
  end if;

  -- Admin roles first, then by name: the first role is the one a badge shows.
  select coalesce(jsonb_agg(jsonb_build_object('slug', r.slug, 'name', r.name,
                                               'is_admin', r.is_admin)
                            order by r.is_admin desc, r.name, r.slug), '[]'::jsonb),
         coalesce(bool_or(r.is_admin), false)
    into role_list, admin
  from public.user_roles ur
  join public.roles r on r.id = ur.role_id
  where ur.user_id = caller;

  -- Every section x action has_capability grants (admin: all; edit implies view), so this list
  -- never disagrees with what RLS enforces. The sections are role_capabilities_section_check's.
  select coalesce(jsonb_agg(s.section || ':' || a.action order by s.position, a.position),
                  '[]'::jsonb)
    into capability_list
  from unnest(array['devices', 'entries', 'settings', 'services', 'tags', 'users', 'stats',
                    'status', 'federation']) with ordinality as s (section, position)
  cross join unnest(array['view', 'edit']) with ordinality as a (action, position)
  where public.has_capability(s.section, a.action);

  -- The token as recorded (label, client) when its jti is one of the caller's api_tokens rows;
  -- a session token has no row and reports its claims only.
  select t.client_id, t.label into token_client_id, token_label
  from public.api_tokens t
  where t.jti = claims ->> 'jti' and t.user_id = caller;

  return jsonb_build_object(
    'user_id', caller,
    'email', account_email,
    'roles', role_list,
    'capabilities', capability_list,
    'is_admin', admin,
    'token', jsonb_build_object(
      'jti', claims ->> 'jti',
      'client_id', coalesce(token_client_id, claims ->> 'client_id'),
      'label', token_label));
end
$$;
comment on function public.whoami() is
  'The caller: {user_id, email, roles: [{slug, name, is_admin}], capabilities: ["section:action"], '
  'is_admin, token: {jti, client_id, label}} (001 §5.4). Signed-in callers only; a revoked token '
  'or one naming no user is refused with 401.';
revoke execute on function public.whoami() from public, anon, service_role;
grant execute on function public.whoami() to authenticated;
