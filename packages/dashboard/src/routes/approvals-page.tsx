// `/approvals`: the destructive farm calls an AI client asked to make, waiting for this person
// (001 §4.1 "confirm-gated"; docs/farm.md "Gating"), live on a private Realtime topic of their
// own (`approvals:<user id>`). Each shows exactly what would run and the client that asked;
// Approve or Deny is one PATCH of `decision`, which the database accepts only from this dashboard
// session (never from the client's own token) and stamps. The client then runs an approved call
// once, before it expires.
import { useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { ConsoleShell } from '../console/console-shell.tsx';
import { type ChannelState, useNow } from '../console/live.ts';
import { type RowChange, subscribePrivateTopic } from '../console/private-topic.ts';
import { formatDuration } from '../console/snapshots.ts';

type PendingAction = {
  id: string;
  tool: string;
  would_run: string;
  client_id: string;
  client_name: string;
  created_at: string;
  expires_at: string;
  decision: 'approved' | 'denied' | null;
  decided_at: string | null;
  decided_via: 'dashboard' | 'elicitation' | null;
  used_at: string | null;
};

const SELECT =
  'id,tool,would_run,client_id,client_name,created_at,expires_at,' +
  'decision,decided_at,decided_via,used_at';
const WAITING_LIMIT = 100;
const RECENT_LIMIT = 20;

/** The list after one broadcast change: the row replaced or added if `keeps` it, else dropped. */
function applyChange(
  list: PendingAction[],
  change: RowChange<PendingAction>,
  keeps: (action: PendingAction) => boolean,
  order: 1 | -1,
  limit: number,
): PendingAction[] {
  const id = (change.record ?? change.old_record)?.id;
  if (!id) return list;
  const rest = list.filter((action) => action.id !== id);
  if (!change.record || !keeps(change.record)) return rest.length === list.length ? list : rest;
  return [...rest, change.record]
    .sort((x, y) => order * (Date.parse(x.created_at) - Date.parse(y.created_at)))
    .slice(0, limit);
}

const isWaiting = (action: PendingAction) => action.decision === null && action.used_at === null;

function usePendingActions() {
  const { supabase } = useAppServices();
  const [waiting, setWaiting] = useState<PendingAction[]>([]);
  const [recent, setRecent] = useState<PendingAction[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [channel, setChannel] = useState<ChannelState>('connecting');
  useEffect(() => {
    let current = true;
    // Changes that arrive while a read is in flight wait for it, then apply on top: the read may
    // predate them, and a change it already holds applies again to the same row.
    let readCount = 0;
    let held: RowChange<PendingAction>[] | null = null;
    const apply = (change: RowChange<PendingAction>) => {
      setWaiting((list) => applyChange(list, change, isWaiting, 1, WAITING_LIMIT));
      setRecent((list) => applyChange(list, change, () => true, -1, RECENT_LIMIT));
    };
    // Two short reads: every action still waiting (oldest first: nearest its expiry), then the
    // newest ones for the record. RLS gives the person their own only.
    const read = async () => {
      readCount += 1;
      const thisRead = readCount;
      held ??= [];
      const [waitingRead, recentRead] = await Promise.all([
        supabase
          .from('farm_pending_actions')
          .select(SELECT)
          .is('decision', null)
          .is('used_at', null)
          .gt('expires_at', new Date().toISOString())
          .order('created_at', { ascending: true })
          .limit(WAITING_LIMIT),
        supabase
          .from('farm_pending_actions')
          .select(SELECT)
          .order('created_at', { ascending: false })
          .limit(RECENT_LIMIT),
      ]);
      // Only the newest read's answer counts; it applies what was held meanwhile.
      if (!current || thisRead !== readCount) return;
      const changes = held ?? [];
      held = null;
      const readError = waitingRead.error ?? recentRead.error;
      if (readError) {
        setError(readError.message);
        return;
      }
      setError(null);
      setWaiting((waitingRead.data ?? []) as unknown as PendingAction[]);
      setRecent((recentRead.data ?? []) as unknown as PendingAction[]);
      for (const change of changes) apply(change);
      setLoaded(true);
    };
    // docs/realtime.md "Private channels": the database broadcasts each change of this person's
    // actions to approvals:<user id>, which only they may join, with farm:edit. Each (re)join
    // re-reads, so nothing missed while the channel was down stays missing.
    let off = () => {};
    void supabase.auth.getSession().then(({ data }) => {
      const userId = data.session?.user.id;
      if (!current || !userId) return;
      off = subscribePrivateTopic<PendingAction>(
        supabase,
        `approvals:${userId}`,
        (change) => {
          if (held) held.push(change);
          else apply(change);
        },
        (state) => {
          if (!current) return;
          setChannel(state);
          if (state === 'live') void read();
        },
      );
    });
    void read();
    return () => {
      current = false;
      off();
    };
  }, [supabase]);
  return { waiting, recent, error, loaded, channel };
}

function ClientName(props: { action: PendingAction }) {
  return (
    <>
      <strong data-testid="client-name">{props.action.client_name}</strong>{' '}
      <span className="muted">(client {props.action.client_id})</span>
    </>
  );
}

function WaitingAction(props: { action: PendingAction; now: number }) {
  const { supabase } = useAppServices();
  const { action } = props;
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  async function decide(decision: 'approved' | 'denied') {
    setSending(true);
    setError(null);
    const { data, error: updateError } = await supabase
      .from('farm_pending_actions')
      .update({ decision })
      .eq('id', action.id)
      .select('id');
    setSending(false);
    // The database's own words; no row means it expired or was decided meanwhile.
    if (updateError) setError(updateError.message);
    else if (!data?.length) setError('This request expired or was already decided.');
  }
  const left = (Date.parse(action.expires_at) - props.now) / 1000;
  return (
    <li className="panel" data-testid="pending-action" data-id={action.id}>
      <p>
        <ClientName action={action} /> asks to run <code>{action.tool}</code>{' '}
        <span className="muted">
          · asked {new Date(action.created_at).toLocaleTimeString()} · expires in{' '}
          {formatDuration(Math.max(0, left))}
        </span>
      </p>
      <p className="muted">Exactly what would run:</p>
      <pre data-testid="would-run">{action.would_run}</pre>
      {error && (
        <p className="error" role="alert" data-testid="approval-error">
          {error}
        </p>
      )}
      <div className="actions">
        <button
          type="button"
          className="button--small"
          disabled={sending}
          onClick={() => decide('approved')}
        >
          Approve
        </button>
        <button
          type="button"
          className="button--small button--secondary"
          disabled={sending}
          onClick={() => decide('denied')}
        >
          Deny
        </button>
      </div>
    </li>
  );
}

/** What became of an action: its decision and whether the client ran it, or its expiry. */
function outcomeOf(action: PendingAction, now: number): string {
  if (action.decision === 'denied') return 'Denied';
  if (action.decision === 'approved') {
    const via = action.decided_via === 'elicitation' ? ' in the client' : '';
    if (action.used_at) return `Approved${via}, ran`;
    return Date.parse(action.expires_at) > now
      ? `Approved${via}, not run yet`
      : `Approved${via}, expired`;
  }
  return Date.parse(action.expires_at) > now ? 'Waiting' : 'Expired';
}

function Approvals() {
  const { waiting, recent, error, loaded, channel } = usePendingActions();
  const now = useNow();
  // One that expires while shown leaves the list at once (the database refuses it anyway).
  const open = waiting.filter((action) => Date.parse(action.expires_at) > now);
  return (
    <>
      <h1>Approvals</h1>
      <p className="muted">
        Destructive farm calls your AI clients asked to make. Nothing runs until you approve it
        here; the client that asked then runs exactly what is shown, once, before it expires. A
        client cannot approve its own request.
      </p>
      {error && <p className="error">{error}</p>}
      {channel === 'failed' && (
        <p className="error" data-testid="approvals-live-failed">
          Live updates are unavailable; reload the page to see new requests.
        </p>
      )}
      <h2>Waiting ({open.length})</h2>
      {!loaded ? (
        <p className="muted" data-testid="approvals-loading">
          Loading…
        </p>
      ) : open.length === 0 ? (
        <p className="muted" data-testid="no-pending-actions">
          Nothing is waiting for you.
        </p>
      ) : (
        <ul className="plain-list" data-testid="pending-actions">
          {open.map((action) => (
            <WaitingAction key={action.id} action={action} now={now} />
          ))}
        </ul>
      )}
      <h2>Recent</h2>
      <div className="table-wrap">
        <table className="table" data-testid="recent-actions">
          <thead>
            <tr>
              <th scope="col">Client</th>
              <th scope="col">Tool</th>
              <th scope="col">Outcome</th>
              <th scope="col">Asked</th>
            </tr>
          </thead>
          <tbody>
            {recent.map((action) => (
              <tr key={action.id} data-id={action.id} data-outcome={outcomeOf(action, now)}>
                <td>
                  <ClientName action={action} />
                </td>
                <td>
                  <code>{action.tool}</code>
                </td>
                <td>{outcomeOf(action, now)}</td>
                <td>{new Date(action.created_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

export function ApprovalsPage() {
  return (
    <ConsoleShell>
      <Approvals />
    </ConsoleShell>
  );
}
