// The signed-in session as React state, from supabase-js's auth events: one provider at the top,
// useSession() in pages. Later consoles read the access token from here too.
import type { Session } from '@supabase/supabase-js';
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react';
import { useAppServices } from './app-context.tsx';

export type SessionState =
  | { status: 'loading' }
  | { status: 'signed-out' }
  | { status: 'signed-in'; session: Session };

const SessionContext = createContext<SessionState>({ status: 'loading' });

export function SessionProvider(props: { children: ReactNode }) {
  const { supabase } = useAppServices();
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  useEffect(() => {
    // INITIAL_SESSION arrives once supabase-js has read storage and any magic-link `?code=`, so
    // nothing renders as signed out while a returning link is still being exchanged. The
    // callback only sets state: awaiting supabase calls inside it would deadlock auth-js.
    const { data } = supabase.auth.onAuthStateChange((_event, session) => {
      setState(session ? { status: 'signed-in', session } : { status: 'signed-out' });
    });
    return () => data.subscription.unsubscribe();
  }, [supabase]);
  return <SessionContext value={state}>{props.children}</SessionContext>;
}

export function useSession(): SessionState {
  return useContext(SessionContext);
}
