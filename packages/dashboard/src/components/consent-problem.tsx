// Why a consent request cannot be shown or answered. Final states (unknown, expired, already
// answered, a malformed link) get no buttons: nothing on this page can fix them.
import type { ConsentErrorCode } from '../consent-api.ts';
import { PageFrame } from './page-frame.tsx';

export type ConsentProblemCode = ConsentErrorCode | 'invalid_link';

const PROBLEMS: Record<ConsentProblemCode, { title: string; text: string }> = {
  invalid_link: {
    title: 'This link is not valid',
    text: 'The address of this page is incomplete. Go back to the application and connect again.',
  },
  not_found: {
    title: 'We cannot find this request',
    text: 'This authorization request does not exist. Go back to the application and connect again.',
  },
  expired: {
    title: 'This request has expired',
    text: 'It waited too long for an answer. Go back to the application and connect again.',
  },
  already_decided: {
    title: 'This request was already answered',
    text: 'Allow or Deny was already pressed for it. Go back to the application.',
  },
  invalid_token: {
    title: 'Please sign in again',
    text: 'Your session was not accepted.',
  },
  unavailable: {
    title: 'The tool server cannot be reached',
    text: 'Check your connection, then try again.',
  },
  server_error: {
    title: 'Something went wrong',
    text: 'The request could not be loaded. Try again in a moment.',
  },
};

/** The sentence for a decision that failed but can be tried again. */
export function describeDecisionError(code: ConsentProblemCode): string {
  return `${PROBLEMS[code].title}. ${PROBLEMS[code].text}`;
}

export function ConsentProblem(props: { code: ConsentProblemCode; onRetry?: () => void }) {
  const problem = PROBLEMS[props.code];
  const retryable = props.code === 'unavailable' || props.code === 'server_error';
  return (
    <PageFrame>
      <div data-testid="consent-error" data-code={props.code}>
        <h1>{problem.title}</h1>
        <p>{problem.text}</p>
        {retryable && props.onRetry && (
          <button type="button" onClick={props.onRetry}>
            Try again
          </button>
        )}
      </div>
    </PageFrame>
  );
}
