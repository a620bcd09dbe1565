// Installs the session /exchange returned in supabase-js, replacing whatever account was active
// (000 §1: "its session is switched in place to the partner user, no manual sign-out").
import type { Session, SupabaseClient } from '@supabase/supabase-js';
import { CompanionHandoffError } from './companion-handoff-error.ts';
import type { HandoffSession } from './exchange-handoff-code.ts';

export interface InstalledSession {
  session: Session;
  /** The account that was active before, if any (another user or an older session of this one). */
  replaced: { user_id: string; email: string | undefined } | null;
}

/** The active session in this client, if any; reads storage only, no network. */
export async function readActiveAccount(
  supabase: SupabaseClient,
): Promise<{ session: Session; user_id: string; email: string | undefined } | null> {
  const { data } = await supabase.auth.getSession();
  const session = data.session;
  return session ? { session, user_id: session.user.id, email: session.user.email } : null;
}

/**
 * Another user's session is signed out first with scope `local`: its refresh token is revoked on
 * the server and supabase-js emits SIGNED_OUT, so the app drops the other account's state before
 * SIGNED_IN arrives for the partner user. An older session of the same user is replaced, then
 * revoked without a SIGNED_OUT, so the app sees no flicker.
 *
 * Another user is replaced only when `confirmedReplacing` names them (the person confirmed the
 * switch away from that account: login CSRF, docs/federation.md "Login CSRF in the companion app");
 * otherwise `confirmation_required` is thrown and nothing changes. The hand-off session is then
 * still valid on the server: revoke it (completeHandoff does).
 */
export async function installHandoffSession(
  supabase: SupabaseClient,
  handoff: HandoffSession,
  options: { confirmedReplacing?: string } = {},
): Promise<InstalledSession> {
  const previous = await readActiveAccount(supabase);
  if (
    previous &&
    previous.user_id !== handoff.user_id &&
    previous.user_id !== options.confirmedReplacing
  ) {
    throw new CompanionHandoffError(
      'confirmation_required',
      'Another account is signed in; switching needs the confirmation step',
    );
  }
  if (previous && previous.user_id !== handoff.user_id) {
    // A failed revocation (offline) must not block the switch: setSession below replaces the
    // stored session either way, and the old refresh token then simply goes unused.
    await supabase.auth.signOut({ scope: 'local' });
  }
  const { data, error } = await supabase.auth.setSession({
    access_token: handoff.access_token,
    refresh_token: handoff.refresh_token,
  });
  if (error || !data.session || data.session.user.id !== handoff.user_id) {
    throw new CompanionHandoffError(
      'session_rejected',
      'The hand-off session could not be installed',
      {
        cause: error ?? undefined,
      },
    );
  }
  if (previous && previous.user_id === handoff.user_id) {
    await supabase.auth.admin.signOut(previous.session.access_token, 'local');
  }
  return {
    session: data.session,
    replaced: previous ? { user_id: previous.user_id, email: previous.email } : null,
  };
}
