// What the signed-in account may see, from `whoami()` (001 §5.4): read once per session and shared
// by the shell (which pages exist) and the pages (which sections and buttons exist). The database
// enforces every rule again through RLS; this only keeps what a role may not see off the screen,
// so it is absent rather than broken.
import type { SupabaseClient } from '@supabase/supabase-js';
import { createContext, type ReactNode, useContext, useEffect, useState } from 'react';
import { type AccountAccess, parseWhoami } from './access-rules.ts';
import { useAppServices } from './app-context.tsx';

export async function fetchAccess(supabase: SupabaseClient): Promise<AccountAccess> {
  const { data, error } = await supabase.rpc('whoami');
  if (error) throw new Error(`whoami failed: ${error.message}`);
  return parseWhoami(data);
}

export type AccessState =
  | { status: 'loading' }
  | { status: 'failed'; message: string }
  | { status: 'ready'; access: AccountAccess };

const AccessContext = createContext<AccountAccess | null>(null);

/**
 * The last answer, so moving between pages (each mounts its own shell) shows the frame at once
 * instead of reading whoami again. Another account, or a reload, reads afresh.
 */
let remembered: AccountAccess | null = null;

/** Reads whoami for `userId`; the shell renders pages only once it is ready. */
export function useAccessState(userId: string | undefined): AccessState {
  const { supabase } = useAppServices();
  const [state, setState] = useState<AccessState>(() =>
    remembered && remembered.userId === userId
      ? { status: 'ready', access: remembered }
      : { status: 'loading' },
  );
  useEffect(() => {
    if (!userId) return;
    if (remembered?.userId === userId) {
      setState({ status: 'ready', access: remembered });
      return;
    }
    let current = true;
    setState({ status: 'loading' });
    fetchAccess(supabase).then(
      (access) => {
        remembered = access;
        if (current) setState({ status: 'ready', access });
      },
      (error: Error) => current && setState({ status: 'failed', message: error.message }),
    );
    return () => {
      current = false;
    };
  }, [supabase, userId]);
  return state;
}

export function AccessProvider(props: { access: AccountAccess; children: ReactNode }) {
  return <AccessContext value={props.access}>{props.children}</AccessContext>;
}

export function useAccess(): AccountAccess {
  const access = useContext(AccessContext);
  if (!access) throw new Error('useAccess() outside AccessProvider');
  return access;
}
