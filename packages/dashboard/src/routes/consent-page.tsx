// /mcp/consent?rid=<rid>: the tool server's OAuth consent step (001 §3). Signed-out visitors sign
// in first and come back to the same request; Switch account keeps the request pending.
import { useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { ConsentCard } from '../components/consent-card.tsx';
import { ConsentProblem, describeDecisionError } from '../components/consent-problem.tsx';
import { LoadingCard } from '../components/page-frame.tsx';
import { useSignInRedirect } from '../components/use-sign-in-redirect.ts';
import { consentPath, isValidRid, signInPath } from '../next-path.ts';
import { navigate, useLocation } from '../router.ts';
import { useAuthorizationRequest } from './use-authorization-request.ts';

export function ConsentPage() {
  const location = useLocation();
  const rid = new URLSearchParams(location.search).get('rid');
  // A malformed rid cannot name a request: no sign-in detour, no API call.
  if (!isValidRid(rid)) return <ConsentProblem code="invalid_link" />;
  return <ConsentRequest key={rid} rid={rid} />;
}

function ConsentRequest(props: { rid: string }) {
  const { rid } = props;
  const { supabase } = useAppServices();
  const session = useSignInRedirect(consentPath(rid));
  const user = session.status === 'signed-in' ? session.session.user : null;
  const { state, decide, retry } = useAuthorizationRequest(rid, user?.id ?? null);
  const [switching, setSwitching] = useState(false);

  async function switchAccount() {
    setSwitching(true);
    // 001 §3: only this browser's session ends; the request stays pending for the next account.
    await supabase.auth.signOut({ scope: 'local' });
    navigate(signInPath(consentPath(rid)), { replace: true });
  }

  if (!user || state.phase === 'loading') return <LoadingCard label="Loading the request…" />;
  if (state.phase === 'failed') return <ConsentProblem code={state.code} onRetry={retry} />;
  const busy =
    state.phase === 'redirecting' ? 'redirecting' : switching ? 'switching' : state.deciding;
  return (
    <ConsentCard
      details={state.details}
      fallbackEmail={user.email ?? null}
      busy={busy}
      error={
        state.phase === 'ready' && state.decisionError
          ? describeDecisionError(state.decisionError)
          : null
      }
      onDecide={(action) => void decide(action)}
      onSwitchAccount={() => void switchAccount()}
    />
  );
}
