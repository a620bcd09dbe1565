// `/`: the signed-in home. For now the account and its role; the live console grows from here.
import { useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { LoadingCard, PageFrame } from '../components/page-frame.tsx';
import { RoleBadge } from '../components/role-badge.tsx';
import { useSignInRedirect } from '../components/use-sign-in-redirect.ts';
import type { ConsentRole } from '../consent-api.ts';
import { HOME_PATH, signInPath } from '../next-path.ts';
import { fetchDisplayRole } from '../roles.ts';
import { navigate } from '../router.ts';

export function HomePage() {
  const { supabase } = useAppServices();
  const session = useSignInRedirect(HOME_PATH);
  const user = session.status === 'signed-in' ? session.session.user : null;
  const [role, setRole] = useState<ConsentRole | null>(null);
  const userId = user?.id;

  useEffect(() => {
    setRole(null);
    if (!userId) return;
    let current = true;
    void fetchDisplayRole(supabase, userId).then((found) => {
      if (current) setRole(found);
    });
    return () => {
      current = false;
    };
  }, [supabase, userId]);

  if (!user) return <LoadingCard label="Loading…" />;

  async function signOut() {
    // This browser's session only; the person's other devices and OAuth grants stay signed in.
    await supabase.auth.signOut({ scope: 'local' });
    navigate(signInPath(HOME_PATH), { replace: true, notice: 'signed_out' });
  }

  return (
    <PageFrame>
      <h1>Welcome</h1>
      <p className="account">
        Signed in as <strong data-testid="account-email">{user.email}</strong>
        {/* Without users:view, RLS hides the roles table: then no badge rather than "no role". */}
        {role && <RoleBadge role={role} />}
      </p>
      <button type="button" className="button--secondary" onClick={signOut}>
        Sign out
      </button>
    </PageFrame>
  );
}
