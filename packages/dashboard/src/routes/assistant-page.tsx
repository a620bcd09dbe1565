// `/assistant`: a chat panel on POST /functions/v1/ask. The answer streams in as it is written,
// tool labels show what the assistant is doing, artifacts (proposed writes) come with Confirm and
// Dismiss, and Stop ends the question at once. Answers are shown as text, never as HTML.
import { type FormEvent, useRef, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { type AskArtifact, ask } from '../assistant/ask-client.ts';
import { confirmProposal } from '../assistant/confirm-client.ts';
import { ProposalCard } from '../assistant/proposal-card.tsx';
import { Markdown } from '../components/markdown.tsx';
import { ConsoleShell } from '../console/console-shell.tsx';
import { useSession } from '../session.tsx';

type Turn = {
  question: string;
  answer: string;
  tools: string[];
  artifacts: AskArtifact[];
  state: 'streaming' | 'done' | 'stopped' | 'failed';
  error?: string;
};

function Assistant() {
  const { config, supabase } = useAppServices();
  const session = useSession();
  const [turns, setTurns] = useState<Turn[]>([]);
  const [question, setQuestion] = useState('');
  const controller = useRef<AbortController | null>(null);
  const streaming = turns.at(-1)?.state === 'streaming';

  // The freshest token: supabase-js refreshes it when it is close to expiry.
  async function accessToken(): Promise<string | null> {
    const { data } = await supabase.auth.getSession();
    return (
      data.session?.access_token ??
      (session.status === 'signed-in' ? session.session.access_token : null)
    );
  }

  async function confirm(confirmation: string) {
    const token = await accessToken();
    if (!token)
      return {
        kind: 'refused' as const,
        status: 401,
        code: 'unauthorized',
        message: 'You are signed out; sign in again and ask once more.',
      };
    return confirmProposal(
      {
        supabaseUrl: config.supabaseUrl,
        apiKey: config.supabasePublishableKey,
        accessToken: token,
      },
      confirmation,
    );
  }

  const update = (change: (turn: Turn) => Turn) =>
    setTurns((current) => [...current.slice(0, -1), change(current.at(-1) as Turn)]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const text = question.trim();
    if (!text || streaming || session.status !== 'signed-in') return;
    const token = (await accessToken()) ?? session.session.access_token;
    const history = turns
      .filter((turn) => turn.state === 'done')
      .flatMap((turn) => [
        { role: 'user' as const, text: turn.question },
        { role: 'assistant' as const, text: turn.answer },
      ]);
    setQuestion('');
    setTurns((current) => [
      ...current,
      { question: text, answer: '', tools: [], artifacts: [], state: 'streaming' },
    ]);
    const abort = new AbortController();
    controller.current = abort;
    try {
      await ask(
        {
          url: `${config.supabaseUrl}/functions/v1/ask`,
          apiKey: config.supabasePublishableKey,
          accessToken: token,
          signal: abort.signal,
        },
        { question: text, history, context: 'The dashboard assistant page' },
        {
          onTool: (label) => update((turn) => ({ ...turn, tools: [...turn.tools, label] })),
          onText: (delta) => update((turn) => ({ ...turn, answer: turn.answer + delta })),
          onArtifact: (artifact) =>
            update((turn) => ({ ...turn, artifacts: [...turn.artifacts, artifact] })),
          // `done` carries the filtered answer, which wins over the streamed text.
          onDone: (answer) => update((turn) => ({ ...turn, answer, state: 'done' })),
          onError: (message) => update((turn) => ({ ...turn, state: 'failed', error: message })),
        },
      );
      update((turn) =>
        turn.state === 'streaming'
          ? { ...turn, state: 'failed', error: 'The answer ended early.' }
          : turn,
      );
    } catch (error) {
      if (abort.signal.aborted) update((turn) => ({ ...turn, state: 'stopped' }));
      else update((turn) => ({ ...turn, state: 'failed', error: (error as Error).message }));
    } finally {
      controller.current = null;
    }
  }

  return (
    <>
      <h1>Assistant</h1>
      <p className="muted">
        Answers come from the captures, devices, stats and status your role may read.
      </p>
      <div className="chat" data-testid="chat">
        {turns.map((turn, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: turns are only appended
          <div key={index} className="chat__turn" data-testid="chat-turn" data-state={turn.state}>
            <p className="chat__message chat__message--user">{turn.question}</p>
            {turn.tools.length > 0 && (
              <ul
                className="chat__tools"
                data-testid="tool-labels"
                aria-label="What the assistant did"
              >
                {turn.tools.map((label, toolIndex) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: labels repeat
                  <li key={toolIndex}>{label}</li>
                ))}
              </ul>
            )}
            <div className="chat__message" data-testid="chat-answer" aria-live="polite">
              {turn.answer ? (
                <Markdown text={turn.answer} />
              ) : turn.state === 'streaming' ? (
                '…'
              ) : (
                ''
              )}
            </div>
            {turn.artifacts.map((artifact, artifactIndex) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: artifacts are only appended
              <ProposalCard key={artifactIndex} artifact={artifact} confirm={confirm} />
            ))}
            {turn.state === 'stopped' && <p className="muted">Stopped.</p>}
            {turn.error && (
              <p className="error" role="alert">
                {turn.error}
              </p>
            )}
          </div>
        ))}
      </div>
      <form className="chat__form" onSubmit={submit}>
        <label htmlFor="assistant-question">Question</label>
        <textarea
          id="assistant-question"
          rows={3}
          maxLength={4000}
          value={question}
          onChange={(event) => setQuestion(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && (event.metaKey || event.ctrlKey))
              event.currentTarget.form?.requestSubmit();
          }}
        />
        <div className="actions">
          <button type="submit" disabled={streaming || !question.trim()}>
            Ask
          </button>
          <button
            type="button"
            className="button--secondary"
            disabled={!streaming}
            onClick={() => controller.current?.abort()}
          >
            Stop
          </button>
        </div>
      </form>
    </>
  );
}

export function AssistantPage() {
  return (
    <ConsoleShell>
      <Assistant />
    </ConsoleShell>
  );
}
