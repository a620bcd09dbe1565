// The consent question itself (001 §5 rule 2): which application, where it returns, what it
// may do (full dashboard access), and as whom, with Allow, Deny and Switch account.
import type { AuthorizationDetails, ConsentDecision } from '../consent-api.ts';
import { PageFrame } from './page-frame.tsx';
import { RoleBadge } from './role-badge.tsx';

export type ConsentCardProps = {
  details: AuthorizationDetails;
  /** The session's address, in case the tool server has none for the account. */
  fallbackEmail: string | null;
  busy: ConsentDecision | 'redirecting' | 'switching' | null;
  error: string | null;
  onDecide: (action: ConsentDecision) => void;
  onSwitchAccount: () => void;
};

export function ConsentCard(props: ConsentCardProps) {
  const { details, busy } = props;
  // The client names itself at registration (DCR): shown, but the redirect host is the fact.
  const appName = details.client.name || details.client.client_id;
  const email = details.user.email ?? props.fallbackEmail ?? details.user.id;
  const disabled = busy !== null;
  return (
    <PageFrame wide>
      <h1 data-testid="consent-heading">Allow {appName} to access your account?</h1>
      <dl className="facts">
        <dt>Returns you to</dt>
        <dd data-testid="redirect-host">{details.redirect_host}</dd>
        <dt>Access</dt>
        <dd data-testid="scope-description">{details.scope_description}</dd>
        <dt>Account</dt>
        <dd className="account">
          <span data-testid="account-email">{email}</span>
          <RoleBadge role={details.user.role} />
        </dd>
      </dl>
      <p className="muted">
        The application will act as you, with everything your role allows. Only allow applications
        you trust; the name above is the application's own claim, the address it returns to is not.
      </p>
      {props.error && (
        <p className="error" role="alert" data-testid="consent-decision-error">
          {props.error}
        </p>
      )}
      {busy === 'redirecting' && (
        <p className="notice" aria-live="polite">
          Returning you to {details.redirect_host}…
        </p>
      )}
      <div className="actions">
        <button type="button" disabled={disabled} onClick={() => props.onDecide('approve')}>
          Allow
        </button>
        <button
          type="button"
          className="button--secondary"
          disabled={disabled}
          onClick={() => props.onDecide('deny')}
        >
          Deny
        </button>
        <button
          type="button"
          className="button--link"
          disabled={disabled}
          onClick={props.onSwitchAccount}
        >
          Switch account
        </button>
      </div>
    </PageFrame>
  );
}
