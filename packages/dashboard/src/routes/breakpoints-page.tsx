// `/breakpoints`: requests held at a breakpoint (001 §3: held → resumed, once), live over Realtime.
// Continue, abort or modify go to the database as one PATCH (`resolution`, `modified_message` in
// the shape the database accepts, pre-filled from the held message); the database stamps who and
// when. Whoever holds the request (the proxy, docs/proxy.md) acts on
// the resumed row. Without entries:edit the list is read-only.
import { useEffect, useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';
import { editableMessage, MODIFIABLE_KEYS } from '../console/breakpoint-message.ts';
import { ConsoleShell } from '../console/console-shell.tsx';
import { subscribeTable, useNow } from '../console/live.ts';
import { formatDuration } from '../console/snapshots.ts';

type BreakpointEvent = {
  id: number;
  device_uuid: string;
  request_id: string | null;
  phase: 'request' | 'response';
  pattern: string;
  method: string | null;
  url: string | null;
  message: Record<string, unknown>;
  held_at: string;
  resumed_at: string | null;
  resolution: string | null;
  devices: { name: string } | null;
};

const SELECT =
  'id,device_uuid,request_id,phase,pattern,method,url,message,held_at,resumed_at,resolution,devices(name)';

/** Held rows, oldest first: the ones nearest the proxy's hold limit lead. */
const HELD_LIMIT = 200;
const RESUMED_LIMIT = 50;

function useBreakpointEvents() {
  const { supabase } = useAppServices();
  const [held, setHeld] = useState<BreakpointEvent[]>([]);
  const [resumed, setResumed] = useState<BreakpointEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    let current = true;
    // Two reads: every held row (resumed_at is null, the partial index's query), then the recent
    // resumed ones. One "newest 100" read let a busy device's resumes push an old hold out.
    const read = async () => {
      const [heldRead, resumedRead] = await Promise.all([
        supabase
          .from('breakpoint_events')
          .select(SELECT)
          .is('resumed_at', null)
          .order('id', { ascending: true })
          .limit(HELD_LIMIT),
        supabase
          .from('breakpoint_events')
          .select(SELECT)
          .not('resumed_at', 'is', null)
          .order('id', { ascending: false })
          .limit(RESUMED_LIMIT),
      ]);
      if (!current) return;
      const readError = heldRead.error ?? resumedRead.error;
      if (readError) {
        setError(readError.message);
        return;
      }
      setError(null);
      setHeld((heldRead.data ?? []) as unknown as BreakpointEvent[]);
      setResumed((resumedRead.data ?? []) as unknown as BreakpointEvent[]);
      setLoaded(true);
    };
    // A new hold or a resume by anyone re-reads both short lists.
    const off = subscribeTable(
      supabase,
      { topic: 'breakpoints', table: 'breakpoint_events' },
      () => void read(),
      () => {},
    );
    void read();
    return () => {
      current = false;
      off();
    };
  }, [supabase]);
  return { held, resumed, error, loaded };
}

function HeldEvent(props: { event: BreakpointEvent; editable: boolean; now: number }) {
  const { supabase } = useAppServices();
  const { event } = props;
  const [modifying, setModifying] = useState(false);
  // The accepted shape (method/url/headers/body or status/headers/body), not the capture's.
  const [draft, setDraft] = useState(() => JSON.stringify(editableMessage(event), null, 2));
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  async function resume(resolution: 'continue' | 'abort' | 'modify') {
    let modified: unknown = null;
    if (resolution === 'modify') {
      try {
        modified = JSON.parse(draft);
      } catch {
        setError('The modified message is not valid JSON.');
        return;
      }
    }
    setSending(true);
    setError(null);
    const { error: updateError } = await supabase
      .from('breakpoint_events')
      .update({ resolution, ...(resolution === 'modify' ? { modified_message: modified } : {}) })
      .eq('id', event.id);
    setSending(false);
    // The database's own words (e.g. which keys a modified request may have).
    if (updateError) setError(updateError.message);
  }
  return (
    <li className="panel" data-testid="held-breakpoint" data-id={event.id}>
      <p>
        <strong>
          {event.method} {event.url}
        </strong>{' '}
        <span className="muted">
          {event.phase} on {event.devices?.name ?? event.device_uuid} · held{' '}
          {formatDuration((props.now - Date.parse(event.held_at)) / 1000)} · pattern{' '}
          <code>{event.pattern}</code>
        </span>
      </p>
      <details>
        <summary>Message</summary>
        <pre>{JSON.stringify(event.message, null, 2)}</pre>
      </details>
      {error && (
        <p className="error" role="alert" data-testid="breakpoint-error">
          {error}
        </p>
      )}
      {props.editable && (
        <>
          {modifying && (
            <>
              <label>
                Modified message (JSON)
                <textarea
                  className="code-input"
                  rows={12}
                  value={draft}
                  onChange={(change) => setDraft(change.target.value)}
                />
              </label>
              <p className="muted" data-testid="modifiable-keys">
                Allowed keys for a {event.phase}:{' '}
                {MODIFIABLE_KEYS[event.phase].map((key, index) => (
                  <span key={key}>
                    {index > 0 && ', '}
                    <code>{key}</code>
                  </span>
                ))}
                . A key left out keeps the held value; <code>headers</code> replaces them all;{' '}
                {event.phase === 'request' && (
                  <>
                    <code>url</code> stays on the same scheme, host and port;{' '}
                  </>
                )}
                <code>body</code> is a string, {'{"base64": …}'} or null.
              </p>
            </>
          )}
          <div className="actions">
            <button
              type="button"
              className="button--small"
              disabled={sending}
              onClick={() => resume('continue')}
            >
              Resume
            </button>
            {modifying ? (
              <button
                type="button"
                className="button--small"
                disabled={sending}
                onClick={() => resume('modify')}
              >
                Send modified
              </button>
            ) : (
              <button
                type="button"
                className="button--small button--secondary"
                onClick={() => setModifying(true)}
              >
                Modify
              </button>
            )}
            <button
              type="button"
              className="button--small button--secondary"
              disabled={sending}
              onClick={() => resume('abort')}
            >
              Abort
            </button>
          </div>
        </>
      )}
    </li>
  );
}

function Breakpoints() {
  const access = useAccess();
  const editable = can(access, 'entries', 'edit');
  const { held, resumed: done, error, loaded } = useBreakpointEvents();
  const now = useNow();
  return (
    <>
      <h1>Breakpoints</h1>
      {error && <p className="error">{error}</p>}
      <h2>Held ({held.length})</h2>
      {!loaded ? (
        <p className="muted" data-testid="held-loading">
          Loading…
        </p>
      ) : held.length === 0 ? (
        <p className="muted" data-testid="no-held">
          Nothing is held.
        </p>
      ) : (
        <ul className="plain-list" data-testid="held-list">
          {held.map((event) => (
            <HeldEvent key={event.id} event={event} editable={editable} now={now} />
          ))}
        </ul>
      )}
      <h2>Recently resumed</h2>
      <div className="table-wrap">
        <table className="table" data-testid="resumed-breakpoints">
          <thead>
            <tr>
              <th scope="col">Request</th>
              <th scope="col">Resolution</th>
              <th scope="col">Resumed</th>
            </tr>
          </thead>
          <tbody>
            {done.map((event) => (
              <tr key={event.id} data-id={event.id} data-resolution={event.resolution}>
                <td>
                  {event.method} {event.url}
                </td>
                <td>{event.resolution}</td>
                <td>{event.resumed_at && new Date(event.resumed_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

export function BreakpointsPage() {
  return (
    <ConsoleShell>
      <Breakpoints />
    </ConsoleShell>
  );
}
