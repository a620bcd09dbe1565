// /sign-in?next=<path>: email + password, or a magic link that brings the person back here and
// on to `next` (validated, see next-path.ts). Signed-in visitors go straight on to `next`.
import { type FormEvent, useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { LoadingCard, PageFrame } from '../components/page-frame.tsx';
import { readNextPath, signInPath } from '../next-path.ts';
import { navigate, useLocation } from '../router.ts';
import { useSession } from '../session.tsx';
import {
  describeLinkProblem,
  describeSignInFailure,
  isSilentMagicLinkRefusal,
} from '../sign-in-messages.ts';

const NOTICES = {
  session_rejected: 'Your session was not accepted. Please sign in again.',
  signed_out: 'You have signed out.',
};

export function SignInPage() {
  const { supabase } = useAppServices();
  const session = useSession();
  const location = useLocation();
  const next = readNextPath(location.search);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [mailSentTo, setMailSentTo] = useState<string | null>(null);

  useEffect(() => {
    if (session.status === 'signed-in') navigate(next, { replace: true });
  }, [session.status, next]);

  // Loading, or signed in and about to move on to `next`.
  if (session.status !== 'signed-out') return <LoadingCard label="Loading…" />;

  const linkProblem = describeLinkProblem(location.href, false);

  async function signInWithPassword(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const { error: failure } = await supabase.auth.signInWithPassword({ email, password });
    // On success the session event moves the page on to `next`.
    if (failure) setError(describeSignInFailure(failure, 'password'));
    setBusy(false);
  }

  async function sendMagicLink() {
    if (!email) {
      setError('Enter your email address first.');
      return;
    }
    setBusy(true);
    setError(null);
    const { error: failure } = await supabase.auth.signInWithOtp({
      email,
      options: {
        // Back to this page with the same validated `next`; the session is picked up here.
        emailRedirectTo: `${window.location.origin}${signInPath(next)}`,
        shouldCreateUser: false,
      },
    });
    if (failure && !isSilentMagicLinkRefusal(failure)) {
      setError(describeSignInFailure(failure, 'magic_link'));
    } else setMailSentTo(email);
    setBusy(false);
  }

  if (mailSentTo) {
    return (
      <PageFrame>
        <h1>Check your mail</h1>
        <p data-testid="magic-link-sent">
          If <strong>{mailSentTo}</strong> has an account, a sign-in link is on its way. Open it in
          this browser.
        </p>
        <button type="button" className="button--secondary" onClick={() => setMailSentTo(null)}>
          Use a different email
        </button>
      </PageFrame>
    );
  }

  const notice = location.notice ? NOTICES[location.notice] : null;
  return (
    <PageFrame>
      <h1>Sign in</h1>
      {notice && (
        <p className="notice" data-testid="sign-in-notice">
          {notice}
        </p>
      )}
      {(error ?? linkProblem) && (
        <p className="error" role="alert" data-testid="sign-in-error">
          {error ?? linkProblem}
        </p>
      )}
      <form className="form" onSubmit={signInWithPassword}>
        <label htmlFor="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <label htmlFor="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <div className="divider">or</div>
      <button
        type="button"
        className="button--secondary button--wide"
        disabled={busy}
        onClick={sendMagicLink}
      >
        Email me a sign-in link
      </button>
    </PageFrame>
  );
}
