// The project's JWT secret and API keys. Locally these are the Supabase CLI's well-known
// development values, so every Supabase tool and test suite runs against the stack unchanged.
import { SignJWT } from 'jose';

export const WELL_KNOWN_JWT_SECRET = 'super-secret-jwt-token-with-at-least-32-characters-long';
export const WELL_KNOWN_PUBLISHABLE_KEY = 'sb_publishable_ACJWlzQHlZjBrEguHvfOxg_3BJgxAaH';
export const WELL_KNOWN_SECRET_KEY = 'sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz';
/** The CLI's legacy keys expire at this instant (2032-11-12), `exp` of its demo JWTs. */
const WELL_KNOWN_KEY_EXPIRY = 1983812996;

export interface ProjectKeys {
  jwtSecret: string;
  /** Legacy HS256 JWT with role anon. */
  anonKey: string;
  /** Legacy HS256 JWT with role service_role. */
  serviceRoleKey: string;
  publishableKey: string;
  secretKey: string;
}

/** Signs the legacy role key the way the CLI does: header {alg,typ}, claims {iss, role, exp}. */
async function signRoleKey(secret: string, role: 'anon' | 'service_role'): Promise<string> {
  return new SignJWT({ iss: 'supabase-demo', role, exp: WELL_KNOWN_KEY_EXPIRY })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(secret));
}

export async function createProjectKeys(jwtSecret = WELL_KNOWN_JWT_SECRET): Promise<ProjectKeys> {
  return {
    jwtSecret,
    anonKey: await signRoleKey(jwtSecret, 'anon'),
    serviceRoleKey: await signRoleKey(jwtSecret, 'service_role'),
    publishableKey: WELL_KNOWN_PUBLISHABLE_KEY,
    secretKey: WELL_KNOWN_SECRET_KEY,
  };
}
