// Verifies a dashboard session: the access token supabase-js holds after a normal sign-in (001 §1
// "live dashboard session"). A valid signature is not enough: the token must come from the
// project's auth service (its iss), name a session, and that session must still exist, so a
// signed-out session stops working at once rather than at its exp.
import { errors, jwtVerify } from 'jose';
import { OAuthError } from '../oauth/oauth-error.ts';
import type { Database } from '../store/database.ts';

export interface DashboardAccount {
  userId: string;
  email: string | null;
  sessionId: string;
  role: { slug: string; name: string; is_admin: boolean } | null;
}

export function bearerToken(header: string | undefined | null): string | undefined {
  const match = header ? /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header) : null;
  return match?.[1];
}

function refused(description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_token', description, {
    headers: {
      'www-authenticate': `Bearer error="invalid_token", error_description="${description}"`,
    },
    cause,
  });
}

export async function verifyDashboardSession(
  db: Database,
  authorization: string | undefined | null,
  options: { secret: Uint8Array; authIssuer: string },
): Promise<DashboardAccount> {
  const token = bearerToken(authorization);
  if (!token) throw refused('Sign in to the dashboard first');
  let claims: Record<string, unknown>;
  try {
    ({ payload: claims } = await jwtVerify(token, options.secret, {
      algorithms: ['HS256'],
      issuer: options.authIssuer,
      audience: 'authenticated',
    }));
  } catch (error) {
    const expired = error instanceof errors.JWTExpired;
    throw refused(expired ? 'The dashboard session has expired' : 'Not a dashboard session', error);
  }
  const userId = typeof claims.sub === 'string' ? claims.sub : '';
  const sessionId = typeof claims.session_id === 'string' ? claims.session_id : '';
  if (claims.role !== 'authenticated' || !userId || !sessionId || claims.is_anonymous === true) {
    throw refused('Not a dashboard session');
  }
  const rows = await db.query<{
    email: string | null;
    role_slug: string | null;
    role_name: string | null;
    role_is_admin: boolean | null;
  }>(
    `select u.email, r.slug as role_slug, r.name as role_name, r.is_admin as role_is_admin
       from auth.sessions s
       join auth.users u on u.id = s.user_id
       left join lateral (
         select r.slug, r.name, r.is_admin
           from public.user_roles ur join public.roles r on r.id = ur.role_id
          where ur.user_id = u.id
          order by r.is_admin desc, r.name
          limit 1
       ) r on true
      where s.id = $1 and s.user_id = $2
        and (s.not_after is null or s.not_after > now())
        and u.deleted_at is null
        and (u.banned_until is null or u.banned_until < now())`,
    [sessionId, userId],
  );
  const row = rows[0];
  if (!row) throw refused('The dashboard session has ended');
  return {
    userId,
    sessionId,
    email: row.email,
    role: row.role_slug
      ? {
          slug: row.role_slug,
          name: row.role_name ?? row.role_slug,
          is_admin: row.role_is_admin === true,
        }
      : null,
  };
}
