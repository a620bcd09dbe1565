// `/breakpoints`: requests held at a breakpoint (001 §3: held → resumed, once), live over Realtime.
// Continue, abort or modify go to the database as one PATCH (`resolution`, `modified_message`);
// the database stamps who and when. Whoever holds the request (the proxy, docs/proxy.md) acts on
// the resumed row. Without entries:edit the list is read-only.
import { useEffect, useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';
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

function useBreakpointEvents() {
  const { supabase } = useAppServices();
  const [events, setEvents] = useState<BreakpointEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    const read = () =>
      supabase
        .from('breakpoint_events')
        .select(SELECT)
        .order('id', { ascending: false })
        .limit(100)
        .then(({ data, error: readError }) => {
          if (!current) return;
          if (readError) setError(readError.message);
          else setEvents((data ?? []) as unknown as BreakpointEvent[]);
        });
    // A new hold or a resume by someone else re-reads the short list (at most 100 rows).
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
  return { events, error };
}

function HeldEvent(props: { event: BreakpointEvent; editable: boolean; now: number }) {
  const { supabase } = useAppServices();
  const { event } = props;
  const [modifying, setModifying] = useState(false);
  const [draft, setDraft] = useState(() => JSON.stringify(event.message, null, 2));
  const [error, setError] = useState<string | null>(null);
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
    const { error: updateError } = await supabase
      .from('breakpoint_events')
      .update({ resolution, ...(resolution === 'modify' ? { modified_message: modified } : {}) })
      .eq('id', event.id);
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
      {error && <p className="error">{error}</p>}
      {props.editable && (
        <>
          {modifying && (
            <label>
              Modified message (JSON)
              <textarea
                className="code-input"
                rows={8}
                value={draft}
                onChange={(change) => setDraft(change.target.value)}
              />
            </label>
          )}
          <div className="actions">
            <button type="button" className="button--small" onClick={() => resume('continue')}>
              Resume
            </button>
            {modifying ? (
              <button type="button" className="button--small" onClick={() => resume('modify')}>
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
  const { events, error } = useBreakpointEvents();
  const now = useNow();
  const held = events.filter((event) => !event.resumed_at);
  const done = events.filter((event) => event.resumed_at);
  return (
    <>
      <h1>Breakpoints</h1>
      {error && <p className="error">{error}</p>}
      <h2>Held ({held.length})</h2>
      {held.length === 0 ? (
        <p className="muted" data-testid="no-held">
          Nothing is held.
        </p>
      ) : (
        <ul className="plain-list">
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
