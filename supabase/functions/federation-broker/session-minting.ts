// A real Supabase Auth session for an account, minted the way hosted Supabase allows
// (reference A4): admin generate_link (magiclink) and an immediate POST /verify of its
// token_hash, both server-side; the hashed token never leaves this request.
import { BrokerError } from './broker-error.ts';
import { type SupabaseApi, SupabaseApiError } from './supabase-api.ts';

export interface MintedSession {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user: { id: string; email: string };
}

/**
 * Auth keeps one magic-link token per user, so two hand-offs of the same user at the same moment
 * can void each other's link between generate and verify; such a verify is retried with a fresh
 * link a few times.
 */
const ATTEMPTS = 3;

/**
 * The session is for the account chosen by provisioning, found by its e-mail; a session that
 * comes back for any other user id (the address changed hands in between) is never handed out.
 */
export async function mintSession(
  api: SupabaseApi,
  account: { userId: string; email: string },
): Promise<MintedSession> {
  const session = await verifyMagicLink(api, account.email);
  if (session.user.id !== account.userId) {
    throw new BrokerError('server_error', 'the minted session belongs to another user');
  }
  return session;
}

async function verifyMagicLink(api: SupabaseApi, email: string): Promise<MintedSession> {
  for (let attempt = 1;; attempt += 1) {
    const link = await api.auth<{ hashed_token: string }>(
      '/admin/generate_link',
      'POST',
      { type: 'magiclink', email },
      true,
    );
    try {
      return await api.auth<MintedSession>(
        '/verify',
        'POST',
        { type: 'magiclink', token_hash: link.hashed_token },
        false,
      );
    } catch (error) {
      const voided = error instanceof SupabaseApiError && error.status >= 400 && error.status < 500;
      if (!voided || attempt >= ATTEMPTS) throw error;
    }
  }
}
