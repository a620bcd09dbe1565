// The companion app's whole side of the hand-off, for its deep-link handler: parse the link,
// exchange the code, optionally confirm, install the session (000 §1 step 4, §4.2, §4.3).
import type { SupabaseClient } from '@supabase/supabase-js';
import { CompanionHandoffError } from './companion-handoff-error.ts';
import { exchangeHandoffCode, type HandoffSession } from './exchange-handoff-code.ts';
import {
  type InstalledSession,
  installHandoffSession,
  readActiveAccount,
} from './install-handoff-session.ts';
import { type HandoffLinkConfig, parseHandoffLink } from './parse-handoff-link.ts';

/** What the confirmation step is shown: who arrives, from which partner, and whom they replace. */
export interface HandoffArrival {
  email: string;
  user_id: string;
  login_source: string;
  replacing: { user_id: string; email: string | undefined } | null;
}

export interface CompleteHandoffOptions extends HandoffLinkConfig {
  /** The URL the app was opened with. */
  url: string;
  /** `{base_url}/functions/v1/federation-broker`. */
  brokerUrl: string;
  supabase: SupabaseClient;
  /**
   * The interstitial ("Continue as a…@… from PartnerX?"), asked on every hand-off when given.
   * Replacing a signed-in user with a different one needs it: without it that case ends as
   * `confirmation_required` (Auth0's session-transfer rule; docs/federation.md "Login CSRF in the
   * companion app"), so a link planted by someone else (login CSRF, reference A0) never silently
   * signs the user into a foreign account.
   * With no account active, or the same user's, the hand-off stays one tap (000 §1).
   */
  confirm?: (arrival: HandoffArrival) => Promise<boolean> | boolean;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export interface CompletedHandoff extends InstalledSession {
  email: string;
  login_source: string;
}

async function revokeUnusedSession(supabase: SupabaseClient, handoff: HandoffSession) {
  // /logout needs only the user's own access token; nothing here is an admin privilege.
  await supabase.auth.admin.signOut(handoff.access_token, 'local');
}

export async function completeHandoff(options: CompleteHandoffOptions): Promise<CompletedHandoff> {
  const link = parseHandoffLink(options.url, options);
  const handoff = await exchangeHandoffCode({
    brokerUrl: options.brokerUrl,
    code: link.code,
    code_verifier: link.code_verifier,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
  });
  const active = await readActiveAccount(options.supabase);
  const switchesUser = active !== null && active.user_id !== handoff.user_id;
  if (switchesUser && !options.confirm) {
    await revokeUnusedSession(options.supabase, handoff);
    throw new CompanionHandoffError(
      'confirmation_required',
      'Another account is signed in; switching needs the confirmation step. Nothing changed',
    );
  }
  if (options.confirm) {
    const accepted = await options.confirm({
      email: handoff.email,
      user_id: handoff.user_id,
      login_source: handoff.login_source,
      replacing: active ? { user_id: active.user_id, email: active.email } : null,
    });
    if (accepted !== true) {
      await revokeUnusedSession(options.supabase, handoff);
      throw new CompanionHandoffError('declined', 'The hand-off was declined; nothing changed');
    }
  }
  let installed: InstalledSession;
  try {
    // Names the account the person agreed to replace; checked again against the live state, in
    // case another account signed in while the confirmation was on screen.
    installed = await installHandoffSession(options.supabase, handoff, {
      confirmedReplacing: switchesUser ? active.user_id : undefined,
    });
  } catch (error) {
    // A session nobody holds must not stay valid on the server.
    await revokeUnusedSession(options.supabase, handoff);
    throw error;
  }
  return { ...installed, email: handoff.email, login_source: handoff.login_source };
}
