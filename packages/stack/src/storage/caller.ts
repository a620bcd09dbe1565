// Who a request acts as: the verified claims of its bearer token (storage-api src/http/plugins/
// jwt.ts). Routes that serve public objects take a missing or invalid token as `anon`; the others
// refuse it with the verifier's message.
import { type JWTPayload, jwtVerify } from 'jose';
import { storageErrors } from './storage-error.ts';

export interface Caller {
  /** The database role the request runs as (`role` claim; `anon` when there is none). */
  role: string;
  claims: JWTPayload;
  /** The raw token, for `request.jwt` (empty for an unauthenticated caller). */
  jwt: string;
  /** The `sub` claim: the owner of what the caller creates. */
  subject: string | undefined;
  /** False when no valid token came (only routes that allow it go on). */
  authenticated: boolean;
}

/** The service itself, for reads the API does without RLS (bucket lookups, public objects). */
export const SERVICE_CALLER: Caller = {
  role: 'service_role',
  claims: { role: 'service_role' },
  jwt: '',
  subject: undefined,
  authenticated: true,
};

const ANONYMOUS: Caller = {
  role: 'anon',
  claims: { role: 'anon' },
  jwt: '',
  subject: undefined,
  authenticated: false,
};

export async function resolveCaller(
  authorization: string | undefined,
  jwtSecret: string,
  options: { allowAnonymous: boolean },
): Promise<Caller> {
  const token = (authorization ?? '').replace(/^Bearer\s+/i, '').trim();
  if (!token && options.allowAnonymous) return ANONYMOUS;
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(jwtSecret), {
      algorithms: ['HS256'],
    });
    const role = typeof payload.role === 'string' && payload.role !== '' ? payload.role : 'anon';
    return { role, claims: payload, jwt: token, subject: payload.sub, authenticated: true };
  } catch (error) {
    if (options.allowAnonymous) return ANONYMOUS;
    throw storageErrors.accessDenied(error instanceof Error ? error.message : 'Invalid JWT', error);
  }
}
