// `/captures`: the live tail and search. Filters (device, host, method, status class, time,
// workspace) and a search term go to the search RPCs with keyset paging; while "Live" is on, new
// captures arrive over Realtime (`device:<uuid>` for one device) and join the list when they
// match. Select rows for a HAR export, or export a whole workspace, as a download or saved to
// Storage (bucket exports, the user's own folder) with a signed link. Keys: `/` search, j/k move,
// Enter or o open.
import { type FormEvent, useCallback, useEffect, useRef, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import {
  applicableFilters,
  type CaptureCount,
  type CaptureFilters,
  countCaptures,
  EMPTY_FILTERS,
  listCaptures,
  matchesFilters,
  mergeNewest,
  PAGE_SIZE,
} from '../captures/capture-query.ts';
import type { CaptureRow, CaptureSummary } from '../captures/capture-types.ts';
import { downloadJson } from '../captures/download.ts';
import { toHar } from '../captures/har.ts';
import { LIVE_LIMIT, subscribeLiveTail } from '../captures/live-tail.ts';
import { RequestView } from '../captures/request-view.tsx';
import { type SavedExport, saveHarExport } from '../captures/save-export.ts';
import { ConsoleShell } from '../console/console-shell.tsx';
import { useDevices } from '../console/devices-data.ts';
import type { ChannelState } from '../console/live.ts';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'CONNECT'];

type Workspace = { id: string; name: string };
/** A HAR built for export and the name its file takes (without `.har`). */
type HarExport = { har: unknown; name: string };
type SaveOutcome = { saved: SavedExport } | { error: string };

/** Reads full rows in chunks (a URL holds about 100 ids comfortably). */
async function readRows(
  supabase: ReturnType<typeof useAppServices>['supabase'],
  ids: number[],
): Promise<CaptureRow[]> {
  const rows: CaptureRow[] = [];
  for (let start = 0; start < ids.length; start += 100) {
    const { data, error } = await supabase
      .from('entries')
      .select('id,ts,kind,device_uuid,request_id,payload')
      .in('id', ids.slice(start, start + 100));
    if (error) throw new Error(error.message);
    rows.push(...((data ?? []) as CaptureRow[]));
  }
  return rows;
}

function useWorkspaces(): Workspace[] {
  const { supabase } = useAppServices();
  const [workspaces, setWorkspaces] = useState<Workspace[]>([]);
  useEffect(() => {
    void supabase
      .from('workspaces')
      .select('id,name')
      .order('name')
      .then(({ data }) => setWorkspaces((data ?? []) as Workspace[]));
  }, [supabase]);
  return workspaces;
}

function Captures() {
  const { supabase } = useAppServices();
  const { devices } = useDevices();
  const workspaces = useWorkspaces();
  const [draft, setDraft] = useState<CaptureFilters>(EMPTY_FILTERS);
  const [filters, setFilters] = useState<CaptureFilters>(EMPTY_FILTERS);
  const [rows, setRows] = useState<CaptureSummary[]>([]);
  const [count, setCount] = useState<CaptureCount | null>(null);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [live, setLive] = useState(true);
  // The tail's state with the device whose channel it is: after a device change the old
  // channel's "live" does not count, so the badge says Live only once the new channel joined.
  const [tail, setTail] = useState<{ device: string; state: ChannelState }>({
    device: '',
    state: 'connecting',
  });
  const [selected, setSelected] = useState<CaptureSummary | null>(null);
  const [checked, setChecked] = useState<Set<number>>(new Set());
  const [exporting, setExporting] = useState(false);
  const [saveOutcome, setSaveOutcome] = useState<SaveOutcome | null>(null);
  const searchRef = useRef<HTMLInputElement>(null);
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  // First page and count whenever the applied filters change.
  useEffect(() => {
    let current = true;
    setLoading(true);
    setError(null);
    setCount(null);
    listCaptures(supabase, filters, null).then(
      (page) => {
        if (!current) return;
        setRows(page);
        setMore(page.length === PAGE_SIZE);
        setLoading(false);
      },
      (listError: Error) => {
        if (!current) return;
        setError(listError.message);
        setLoading(false);
      },
    );
    countCaptures(supabase, filters).then(
      (value) => current && setCount(value),
      () => current && setCount(null),
    );
    return () => {
      current = false;
    };
  }, [supabase, filters]);

  // The live tail, on the device's own channel when one device is chosen.
  useEffect(() => {
    if (!live) return;
    const device = filters.device;
    let active = true;
    const unsubscribe = subscribeLiveTail(
      supabase,
      device,
      (arrivals) => {
        const matching = arrivals.filter((row) => matchesFilters(row, filtersRef.current));
        if (matching.length === 0) return;
        setRows((current) => mergeNewest(current, matching, Math.max(LIVE_LIMIT, current.length)));
        // An exact count stays exact; an estimate is left alone.
        setCount((value) =>
          value?.exact ? { count: value.count + matching.length, exact: true } : value,
        );
      },
      // A channel already removed may still report; only the current one sets the badge.
      (state) => active && setTail({ device, state }),
    );
    return () => {
      active = false;
      setTail({ device, state: 'connecting' });
      unsubscribe();
    };
  }, [supabase, live, filters.device]);
  const channel: ChannelState = tail.device === filters.device ? tail.state : 'connecting';

  const loadOlder = useCallback(async () => {
    const last = rows.at(-1);
    if (!last) return;
    try {
      const page = await listCaptures(supabase, filters, last.id);
      setRows((current) => [...current, ...page.filter((row) => row.id < last.id)]);
      setMore(page.length === PAGE_SIZE);
    } catch (loadError) {
      setError((loadError as Error).message);
    }
  }, [supabase, filters, rows]);

  // Keyboard: `/` focuses search, j/k move the selection, Enter/o keep it open.
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      const target = event.target as HTMLElement | null;
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
      if (event.metaKey || event.ctrlKey || event.altKey) return;
      if (event.key === '/') {
        event.preventDefault();
        searchRef.current?.focus();
        return;
      }
      if (event.key !== 'j' && event.key !== 'k') return;
      const index = selected ? rows.findIndex((row) => row.id === selected.id) : -1;
      const next = rows[event.key === 'j' ? index + 1 : Math.max(0, index - 1)];
      if (next) {
        setSelected(next);
        document.querySelector<HTMLElement>(`[data-capture-id="${next.id}"] button`)?.focus();
      }
    }
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [rows, selected]);

  function apply(event: FormEvent) {
    event.preventDefault();
    setSelected(null);
    setChecked(new Set());
    setFilters({ ...draft });
  }

  function toggle(id: number) {
    setChecked((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  }

  async function countExactly() {
    try {
      setCount(await countCaptures(supabase, filters, true));
    } catch (countError) {
      setError((countError as Error).message);
    }
  }

  async function selectionHar(): Promise<HarExport> {
    return {
      har: toHar(await readRows(supabase, [...checked])),
      name: `captures-${checked.size}`,
    };
  }

  async function workspaceHar(): Promise<HarExport | null> {
    const workspace = workspaces.find((item) => item.id === filters.workspace);
    if (!workspace) return null;
    const { data, error: linkError } = await supabase
      .from('workspace_entries')
      .select('entry_id')
      .eq('workspace_id', workspace.id);
    if (linkError) throw new Error(linkError.message);
    const ids = (data ?? []).map((link) => Number((link as { entry_id: number }).entry_id));
    return { har: toHar(await readRows(supabase, ids)), name: `workspace-${workspace.name}` };
  }

  /** One export, as a download or saved to Storage; a Storage refusal is shown with the save. */
  async function runExport(build: () => Promise<HarExport | null>, to: 'download' | 'storage') {
    setExporting(true);
    setSaveOutcome(null);
    try {
      const built = await build();
      if (!built) return;
      if (to === 'download') {
        downloadJson(built.har, `${built.name}.har`);
        return;
      }
      try {
        setSaveOutcome({ saved: await saveHarExport(supabase, built.har, built.name) });
      } catch (saveError) {
        setSaveOutcome({ error: (saveError as Error).message });
      }
    } catch (exportError) {
      setError((exportError as Error).message);
    } finally {
      setExporting(false);
    }
  }

  const deviceName = (uuid: string | null) =>
    uuid ? (devices.find((device) => device.uuid === uuid)?.name ?? uuid.slice(0, 8)) : 'proxy';
  const set = (key: keyof CaptureFilters) => (event: { target: { value: string } }) =>
    setDraft((current) => ({ ...current, [key]: event.target.value }));
  // A workspace is listed without method, status or time filters (capture-query.ts): choosing one
  // clears them and the page says so, instead of counting rows it does not list.
  const chooseWorkspace = (event: { target: { value: string } }) =>
    setDraft((current) => applicableFilters({ ...current, workspace: event.target.value }));
  const inWorkspace = !!draft.workspace;

  return (
    <>
      <h1>Captures</h1>
      <form className="toolbar" onSubmit={apply} aria-label="Filters" data-testid="capture-filters">
        <label>
          Search
          <input
            ref={searchRef}
            type="search"
            value={draft.search}
            maxLength={200}
            onChange={set('search')}
            placeholder="host, path or URL"
          />
        </label>
        <label>
          Device
          <select value={draft.device} onChange={set('device')} data-testid="filter-device">
            <option value="">All devices</option>
            {devices.map((device) => (
              <option key={device.uuid} value={device.uuid}>
                {device.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Host
          <input value={draft.host} onChange={set('host')} placeholder="api.example.com" />
        </label>
        <label>
          Method
          <select value={draft.method} onChange={set('method')} disabled={inWorkspace}>
            <option value="">Any</option>
            {METHODS.map((method) => (
              <option key={method}>{method}</option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={draft.statusClass} onChange={set('statusClass')} disabled={inWorkspace}>
            <option value="">Any</option>
            {[1, 2, 3, 4, 5].map((value) => (
              <option key={value} value={String(value)}>
                {value}xx
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input
            type="datetime-local"
            value={draft.from}
            onChange={set('from')}
            disabled={inWorkspace}
          />
        </label>
        <label>
          To
          <input
            type="datetime-local"
            value={draft.to}
            onChange={set('to')}
            disabled={inWorkspace}
          />
        </label>
        <label>
          Workspace
          <select value={draft.workspace} onChange={chooseWorkspace} data-testid="filter-workspace">
            <option value="">None</option>
            {workspaces.map((workspace) => (
              <option key={workspace.id} value={workspace.id}>
                {workspace.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Apply</button>
        {inWorkspace && (
          <p className="muted" data-testid="workspace-filter-note">
            In a workspace, only search, device and host filter the list: method, status and time
            are off.
          </p>
        )}
      </form>
      <div className="actions">
        <label className="checkbox">
          <input
            type="checkbox"
            checked={live}
            onChange={(event) => setLive(event.target.checked)}
            data-testid="live-toggle"
          />{' '}
          Live
        </label>
        <span
          className={`live-badge live-badge--${live ? channel : 'off'}`}
          data-testid="tail-state"
          data-state={live ? channel : 'off'}
        >
          {live
            ? channel === 'live'
              ? `Live${filters.device ? ` on device:${filters.device.slice(0, 8)}` : ''}`
              : channel
            : 'Paused'}
        </span>
        <span className="muted" data-testid="capture-count">
          {count === null
            ? `${rows.length} shown`
            : `${count.exact ? '' : 'about '}${count.count.toLocaleString('en')} matching`}
        </span>
        {count && !count.exact && (
          <button type="button" className="button--small button--secondary" onClick={countExactly}>
            Count exactly
          </button>
        )}
        <button
          type="button"
          className="button--small"
          disabled={checked.size === 0 || exporting}
          onClick={() => runExport(selectionHar, 'download')}
          data-testid="export-selection"
        >
          Export {checked.size} as HAR
        </button>
        <button
          type="button"
          className="button--small button--secondary"
          disabled={checked.size === 0 || exporting}
          onClick={() => runExport(selectionHar, 'storage')}
          data-testid="save-selection"
        >
          Save {checked.size} to Storage
        </button>
        {filters.workspace && (
          <>
            <button
              type="button"
              className="button--small button--secondary"
              disabled={exporting}
              onClick={() => runExport(workspaceHar, 'download')}
              data-testid="export-workspace"
            >
              Export workspace as HAR
            </button>
            <button
              type="button"
              className="button--small button--secondary"
              disabled={exporting}
              onClick={() => runExport(workspaceHar, 'storage')}
              data-testid="save-workspace"
            >
              Save workspace to Storage
            </button>
          </>
        )}
      </div>
      {saveOutcome && 'saved' in saveOutcome && (
        <p className="muted" role="status" data-testid="saved-export">
          Saved to <code data-testid="saved-export-path">{saveOutcome.saved.path}</code>
          {saveOutcome.saved.signedUrl ? (
            <>
              {' '}
              <a
                href={saveOutcome.saved.signedUrl}
                target="_blank"
                rel="noreferrer"
                data-testid="saved-export-link"
              >
                Open (link works for 1 hour)
              </a>
            </>
          ) : (
            ` (no link: ${saveOutcome.saved.linkError ?? 'unknown error'})`
          )}
        </p>
      )}
      {saveOutcome && 'error' in saveOutcome && (
        <p className="error" role="alert" data-testid="save-export-error">
          {saveOutcome.error}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="split">
        <section className="panel" aria-label="Capture list">
          <div className="table-wrap">
            <table className="table" data-testid="captures-table" data-loading={loading}>
              <thead>
                <tr>
                  <th scope="col">
                    <span className="visually-hidden">Select</span>
                  </th>
                  <th scope="col">Request</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="wide-only">
                    Device
                  </th>
                  <th scope="col" className="wide-only">
                    Time
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr
                    key={row.id}
                    data-capture-id={row.id}
                    data-host={row.host ?? ''}
                    aria-selected={selected?.id === row.id}
                  >
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select capture ${row.id}`}
                        checked={checked.has(row.id)}
                        onChange={() => toggle(row.id)}
                      />
                    </td>
                    <td>
                      <button
                        type="button"
                        className="button--link capture-open"
                        onClick={() => setSelected(row)}
                      >
                        {row.method ?? row.kind} {row.host}
                        {row.url ? new URL(row.url, 'http://x').pathname : ''}
                      </button>
                    </td>
                    <td className={(row.status_code ?? 0) >= 400 ? 'bad' : undefined}>
                      {row.status_code ?? row.kind}
                    </td>
                    <td className="wide-only">{deviceName(row.device_uuid)}</td>
                    <td className="wide-only">{new Date(row.ts).toLocaleTimeString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {!loading && rows.length === 0 && <p className="muted">No captures match.</p>}
          {more && (
            <button
              type="button"
              className="button--secondary"
              onClick={loadOlder}
              data-testid="load-older"
            >
              Load older
            </button>
          )}
        </section>
        {selected ? (
          <RequestView id={selected.id} ts={selected.ts} />
        ) : (
          <p className="muted">Select a capture to see it in full.</p>
        )}
      </div>
    </>
  );
}

export function CapturesPage() {
  return (
    <ConsoleShell>
      <Captures />
    </ConsoleShell>
  );
}
