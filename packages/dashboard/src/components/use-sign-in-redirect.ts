// The guard of pages that need a session: a signed-out visitor is sent to sign-in, with this page
// as the validated `next`, so sign-in brings them back here (001 §3 "normal sign-in first").
import { useEffect } from 'react';
import { signInPath } from '../next-path.ts';
import { navigate } from '../router.ts';
import { type SessionState, useSession } from '../session.tsx';

export function useSignInRedirect(returnPath: string): SessionState {
  const session = useSession();
  useEffect(() => {
    if (session.status === 'signed-out') navigate(signInPath(returnPath), { replace: true });
  }, [session.status, returnPath]);
  return session;
}
