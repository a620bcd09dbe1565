// One artifact of an answer: a proposed write with Confirm and Dismiss (docs/assistant.md
// "Writes"). Confirm POSTs the confirmation once with the session token and shows the outcome;
// the buttons go away as soon as either is pressed, so a proposal cannot be sent twice from here
// (and the database applies it once whatever a client does: a replay is 409).
import { useRef, useState } from 'react';
import type { AskArtifact } from './ask-client.ts';
import { type ConfirmOutcome, confirmationIdOf } from './confirm-client.ts';

type CardState =
  | { step: 'proposed' }
  | { step: 'sending' }
  | { step: 'dismissed' }
  | { step: 'answered'; outcome: ConfirmOutcome };

function describeOutcome(outcome: ConfirmOutcome): string {
  if (outcome.kind === 'applied')
    return outcome.tagName && outcome.entryId !== null
      ? `Applied: request ${outcome.entryId} is tagged "${outcome.tagName}".`
      : 'Applied.';
  if (outcome.kind === 'already_applied') return 'Already applied: nothing more was changed.';
  return `Refused: ${outcome.message}`;
}

export function ProposalCard(props: {
  artifact: AskArtifact;
  confirm: (confirmation: string) => Promise<ConfirmOutcome>;
}) {
  const { artifact } = props;
  const [state, setState] = useState<CardState>({ step: 'proposed' });
  // A second click can land before React re-renders the disabled button: the ref stops it.
  const pressed = useRef(false);
  // Only the known fields are shown, as text; anything else the function adds is ignored.
  const confirmation = confirmationIdOf(artifact as Record<string, unknown>);
  const title = typeof artifact.title === 'string' ? artifact.title : String(artifact.action ?? '');

  async function press() {
    if (pressed.current || !confirmation) return;
    pressed.current = true;
    setState({ step: 'sending' });
    setState({ step: 'answered', outcome: await props.confirm(confirmation) });
  }

  function dismiss() {
    if (pressed.current) return;
    pressed.current = true;
    setState({ step: 'dismissed' });
  }

  const outcome = state.step === 'answered' ? state.outcome : null;
  return (
    <div
      className="notice"
      data-testid="chat-artifact"
      data-step={state.step}
      data-outcome={outcome?.kind}
    >
      <strong>{title}</strong>
      {confirmation && state.step === 'proposed' && (
        <>
          <p className="muted">Nothing changes until you confirm.</p>
          <div className="actions">
            <button type="button" className="button--small" onClick={press}>
              Confirm
            </button>
            <button type="button" className="button--small button--secondary" onClick={dismiss}>
              Dismiss
            </button>
          </div>
        </>
      )}
      {state.step === 'sending' && <p className="muted">Applying…</p>}
      {state.step === 'dismissed' && <p className="muted">Dismissed: nothing was changed.</p>}
      {outcome && (
        <p
          className={outcome.kind === 'refused' ? 'error' : 'muted'}
          role={outcome.kind === 'refused' ? 'alert' : 'status'}
          data-testid="artifact-outcome"
        >
          {describeOutcome(outcome)}
        </p>
      )}
    </div>
  );
}
