// The consent page's state: load the pending authorization request with the session's token,
// then send one decision and follow the redirect it returns. A token the tool server does not
// accept signs this browser out and goes back to sign-in for the same request.
import type { SupabaseClient } from '@supabase/supabase-js';
import { useCallback, useEffect, useRef, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import {
  type AuthorizationDetails,
  ConsentApiError,
  type ConsentDecision,
  type ConsentErrorCode,
  decideAuthorization,
  fetchAuthorization,
} from '../consent-api.ts';
import { consentPath, signInPath } from '../next-path.ts';
import { navigate } from '../router.ts';

export type AuthorizationRequestState =
  | { phase: 'loading' }
  | { phase: 'failed'; code: ConsentErrorCode }
  | {
      phase: 'ready';
      details: AuthorizationDetails;
      deciding: ConsentDecision | null;
      decisionError: ConsentErrorCode | null;
    }
  | { phase: 'redirecting'; details: AuthorizationDetails; decision: ConsentDecision };

/** getSession() refreshes an expired access token first, so the call carries a live one. */
async function readAccessToken(supabase: SupabaseClient): Promise<string | null> {
  const { data } = await supabase.auth.getSession();
  return data.session?.access_token ?? null;
}

/** Codes after which the request itself is gone: the page shows why and offers no buttons. */
const FINAL_CODES: ReadonlySet<ConsentErrorCode> = new Set([
  'not_found',
  'expired',
  'already_decided',
]);

function codeOf(error: unknown): ConsentErrorCode {
  return error instanceof ConsentApiError ? error.code : 'server_error';
}

export function useAuthorizationRequest(rid: string, userId: string | null) {
  const { supabase, config } = useAppServices();
  const [state, setState] = useState<AuthorizationRequestState>({ phase: 'loading' });
  const [attempt, setAttempt] = useState(0);
  // One decision in flight at most, even if two clicks land before the buttons re-render.
  const deciding = useRef(false);

  const returnToSignIn = useCallback(async () => {
    await supabase.auth.signOut({ scope: 'local' });
    navigate(signInPath(consentPath(rid)), { replace: true, notice: 'session_rejected' });
  }, [supabase, rid]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` is the retry trigger.
  useEffect(() => {
    if (!userId) return;
    let current = true;
    setState({ phase: 'loading' });
    void (async () => {
      try {
        const accessToken = await readAccessToken(supabase);
        if (!accessToken) return;
        const details = await fetchAuthorization({ mcpUrl: config.mcpUrl, rid, accessToken });
        if (current) setState({ phase: 'ready', details, deciding: null, decisionError: null });
      } catch (error) {
        if (!current) return;
        if (codeOf(error) === 'invalid_token') await returnToSignIn();
        else setState({ phase: 'failed', code: codeOf(error) });
      }
    })();
    return () => {
      current = false;
    };
  }, [supabase, config.mcpUrl, rid, userId, attempt, returnToSignIn]);

  const decide = useCallback(
    async (action: ConsentDecision) => {
      if (state.phase !== 'ready' || deciding.current) return;
      deciding.current = true;
      const { details } = state;
      setState({ phase: 'ready', details, deciding: action, decisionError: null });
      try {
        const accessToken = await readAccessToken(supabase);
        if (!accessToken) throw new ConsentApiError('invalid_token', 401, 'No session');
        const { redirect_url } = await decideAuthorization({
          mcpUrl: config.mcpUrl,
          rid,
          accessToken,
          action,
        });
        setState({ phase: 'redirecting', details, decision: action });
        window.location.assign(redirect_url);
      } catch (error) {
        const code = codeOf(error);
        if (code === 'invalid_token') await returnToSignIn();
        else if (FINAL_CODES.has(code)) setState({ phase: 'failed', code });
        else setState({ phase: 'ready', details, deciding: null, decisionError: code });
      } finally {
        deciding.current = false;
      }
    },
    [state, supabase, config.mcpUrl, rid, returnToSignIn],
  );

  const retry = useCallback(() => setAttempt((n) => n + 1), []);
  return { state, decide, retry };
}
