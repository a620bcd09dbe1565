// Access tokens minted with the project's JWT secret, for claims the auth service does not issue
// itself: a jti recorded in api_tokens (001 §2.1) or a device_uuid (device tokens, 001 §4.2).
import type { RunningStack } from '@capture/stack';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { SignJWT } from 'jose';

export async function mintAccessToken(
  stack: RunningStack,
  claims: { sub: string; jti?: string; device_uuid?: string },
  expiresIn = '1h',
): Promise<string> {
  return new SignJWT({ role: 'authenticated', aud: 'authenticated', ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(stack.keys.jwtSecret));
}

/** supabase-js sending `token` in both apikey and Authorization (001 §5 rule 3). */
export function clientWithToken(stack: RunningStack, token: string): SupabaseClient {
  return createClient(stack.apiUrl, token, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: { headers: { Authorization: `Bearer ${token}` } },
  });
}
