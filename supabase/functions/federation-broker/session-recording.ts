// Cascade revocation (docs/federation.md "Cascade revocation"): every session /exchange mints is
// recorded under the partner and partner user that vouched for it, so withdrawing either signs it
// out. A session that cannot be recorded is never handed out.
import { decodeBase64Url } from '../_shared/federation/base64url.ts';
import { BrokerError } from './broker-error.ts';
import type { MintedSession } from './session-minting.ts';
import type { SupabaseApi } from './supabase-api.ts';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The `session_id` claim of an access token Auth has just issued to the broker itself (so it is
 * read, not verified); undefined when the token does not have one.
 */
export function sessionIdOf(accessToken: string): string | undefined {
  const payload = decodeBase64Url(accessToken.split('.')[1] ?? '');
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(new TextDecoder().decode(payload)) as { session_id?: unknown };
    return typeof claims.session_id === 'string' && UUID_PATTERN.test(claims.session_id)
      ? claims.session_id
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Records the session; when the client was disabled or deleted after the code was consumed, the
 * database ends the session and /exchange answers like any withdrawn client's code (410). Any
 * other failure ends the session here (best effort) and is a 500.
 */
export async function recordSession(
  api: SupabaseApi,
  subject: { clientId: string; partnerSub: string },
  session: MintedSession,
): Promise<void> {
  const sessionId = sessionIdOf(session.access_token);
  let recorded: boolean;
  try {
    if (!sessionId) throw new Error('the minted access token has no session_id');
    recorded = await api.rpc<boolean>('federation_broker_record_session', {
      client_id: subject.clientId,
      partner_sub: subject.partnerSub,
      session_id: sessionId,
      user_id: session.user.id,
    });
  } catch (cause) {
    await api.signOut(session.access_token).catch(() => undefined);
    throw new BrokerError('server_error', 'the minted session could not be recorded', { cause });
  }
  if (!recorded) throw new BrokerError('code_gone', 'client withdrawn during the exchange');
}
