// `/`: the overview. Fleet stats with charts (stats:view), the status board (status:view) and the
// account's own devices (devices:view); each section exists only for a role that may read it.
// Everything is read once and then kept fresh over Realtime (002 §4.1–4.2), never polled.
import { useEffect, useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { BarList, formatNumber, LineChart, MixBar, type Point } from '../components/charts.tsx';
import { ConsoleShell, followLink } from '../console/console-shell.tsx';
import { useDevices } from '../console/devices-data.ts';
import { type SnapshotState, useNow, useSnapshotRow } from '../console/live.ts';
import { isOnline } from '../console/online.ts';
import {
  ageMs,
  formatDuration,
  isHealthy,
  STATS_STALE_MS,
  STATUS_STALE_MS,
  type StatsSnapshot,
  type StatusSnapshot,
} from '../console/snapshots.ts';

const STATUS_NAMES: Record<string, string> = {
  '1': '1xx',
  '2': '2xx',
  '3': '3xx',
  '4': '4xx',
  '5': '5xx',
};

/** Keeps one point per distinct snapshot this page has seen: the throughput line. */
function useHistory(state: SnapshotState<StatsSnapshot>): Point[] {
  const [points, setPoints] = useState<Point[]>([]);
  const snapshot = state.status === 'ready' ? state.row.snapshot : null;
  useEffect(() => {
    if (!snapshot) return;
    const t = Date.parse(snapshot.generated_at);
    setPoints((previous) =>
      previous.some((point) => point.t === t)
        ? previous
        : [...previous, { t, v: snapshot.requests_per_sec }].sort((a, b) => a.t - b.t).slice(-120),
    );
  }, [snapshot]);
  return points;
}

function FeedNote(props: { state: SnapshotState<unknown>; what: string }) {
  const { state } = props;
  if (state.status === 'loading') return <p className="muted">Loading {props.what}…</p>;
  if (state.status === 'absent') return <p className="muted">No {props.what} yet.</p>;
  if (state.status === 'error')
    return (
      <p className="error">
        Could not read {props.what}: {state.message}
      </p>
    );
  return null;
}

function LiveBadge(props: { channel: string }) {
  return (
    <span
      className={`live-badge live-badge--${props.channel}`}
      data-testid="live-badge"
      data-state={props.channel}
    >
      {props.channel === 'live' ? 'Live' : props.channel === 'failed' ? 'Not live' : 'Connecting'}
    </span>
  );
}

function StatsSection() {
  const state = useSnapshotRow<StatsSnapshot>('service_stats');
  const history = useHistory(state);
  const now = useNow();
  if (state.status !== 'ready') {
    return (
      <section className="panel" aria-labelledby="stats-heading" data-testid="stats-section">
        <h2 id="stats-heading">Fleet</h2>
        <FeedNote state={state} what="fleet stats" />
      </section>
    );
  }
  const stats = state.row.snapshot;
  const age = ageMs(state.row.updated_at, now);
  return (
    <section className="panel" aria-labelledby="stats-heading" data-testid="stats-section">
      <div className="panel__head">
        <h2 id="stats-heading">Fleet</h2>
        <LiveBadge channel={state.channel} />
        <span className={age > STATS_STALE_MS ? 'muted stale' : 'muted'} data-testid="stats-age">
          computed {formatDuration(age / 1000)} ago
        </span>
      </div>
      <dl className="tiles" data-testid="stats-tiles">
        <div>
          <dt>Devices online</dt>
          <dd data-testid="stat-online">
            {formatNumber(stats.online_devices)} / {formatNumber(stats.total_devices)}
          </dd>
        </div>
        <div>
          <dt>Captures</dt>
          <dd data-testid="stat-total">{formatNumber(stats.total_entries)}</dd>
        </div>
        <div>
          <dt>Last hour</dt>
          <dd>{formatNumber(stats.entries_1h)}</dd>
        </div>
        <div>
          <dt>Last 24 h</dt>
          <dd>{formatNumber(stats.entries_24h)}</dd>
        </div>
      </dl>
      <div className="chart-grid">
        <LineChart
          points={history}
          label="Throughput"
          unit="req/s (5 min mean)"
          testId="chart-throughput"
        />
        <MixBar
          mix={stats.status_class_mix}
          names={STATUS_NAMES}
          label="Status classes, 24 h"
          testId="chart-status-mix"
        />
        <MixBar mix={stats.source_mix} label="Sources, 24 h" testId="chart-source-mix" />
        <MixBar
          mix={stats.connection_type_mix}
          label="Devices by connection"
          testId="chart-connection-mix"
        />
        <BarList
          label="Top domains, 24 h"
          testId="chart-top-domains"
          items={stats.top_domains.map((item) => ({
            key: item.host,
            label: item.host,
            value: item.count,
          }))}
        />
        <BarList
          label="Top devices, 24 h"
          testId="chart-top-devices"
          items={stats.top_devices.map((item) => ({
            key: item.device_uuid,
            label: item.name,
            value: item.count,
          }))}
        />
      </div>
    </section>
  );
}

function StatusSection() {
  const state = useSnapshotRow<StatusSnapshot>('service_status');
  const now = useNow();
  if (state.status !== 'ready') {
    return (
      <section className="panel" aria-labelledby="status-heading" data-testid="status-section">
        <h2 id="status-heading">Status</h2>
        <FeedNote state={state} what="status" />
      </section>
    );
  }
  const status = state.row.snapshot;
  const age = ageMs(state.row.updated_at, now);
  const stale = age > STATUS_STALE_MS;
  return (
    <section className="panel" aria-labelledby="status-heading" data-testid="status-section">
      <div className="panel__head">
        <h2 id="status-heading">Status</h2>
        <LiveBadge channel={state.channel} />
        <span className="muted" data-testid="status-age">
          updated {formatDuration(age / 1000)} ago
        </span>
      </div>
      {stale ? (
        // 002 §8: the snapshot is not the truth any more; say so instead of showing it.
        <p className="error" role="alert" data-testid="status-stale">
          The status service has not reported for {formatDuration(age / 1000)}: it is probably down.
          The last snapshot is not shown because it may no longer be true.
        </p>
      ) : (
        <>
          <p
            className={`overall overall--${status.overall}`}
            data-testid="status-overall"
            data-overall={status.overall}
          >
            Overall: {status.overall}
          </p>
          <dl className="tiles">
            <div>
              <dt>CPU</dt>
              <dd data-testid="host-cpu">{Math.round(status.host.cpu * 100)} %</dd>
            </div>
            <div>
              <dt>Load</dt>
              <dd>{status.host.load.map((value) => value.toFixed(2)).join(' / ')}</dd>
            </div>
            <div>
              <dt>Memory</dt>
              <dd>
                {formatNumber(status.host.mem.usedMb)} / {formatNumber(status.host.mem.totalMb)} MB
              </dd>
            </div>
            <div>
              <dt>Uptime</dt>
              <dd>{formatDuration(status.host.uptime)}</dd>
            </div>
          </dl>
          <div className="table-wrap">
            <table className="table" data-testid="status-components">
              <caption className="visually-hidden">Components</caption>
              <thead>
                <tr>
                  <th scope="col">Component</th>
                  <th scope="col">Probe</th>
                  <th scope="col">HTTP</th>
                  <th scope="col">Latency</th>
                  <th scope="col">Unit</th>
                </tr>
              </thead>
              <tbody>
                {status.components.map((component) => (
                  <tr
                    key={component.key}
                    data-key={component.key}
                    data-healthy={isHealthy(component)}
                  >
                    <th scope="row">{component.label}</th>
                    <td className={component.probe.up ? 'ok' : 'bad'}>
                      {component.probe.up ? 'up' : 'down'}
                    </td>
                    <td>{component.probe.httpStatus || '–'}</td>
                    <td>{component.probe.latencyMs.toFixed(1)} ms</td>
                    <td className={component.unitState === 'active' ? 'ok' : 'bad'}>
                      {component.unitState}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

function OwnDevicesSection() {
  const { devices, loaded } = useDevices();
  const now = useNow();
  const online = devices.filter((device) => isOnline(device, now)).length;
  return (
    <section
      className="panel"
      aria-labelledby="own-devices-heading"
      data-testid="own-devices-section"
    >
      <h2 id="own-devices-heading">Devices</h2>
      {loaded ? (
        <p>
          <strong data-testid="own-devices-online">{online}</strong> of {devices.length} online ·{' '}
          <a href="/devices" onClick={(event) => followLink(event, '/devices')}>
            Manage devices
          </a>
        </p>
      ) : (
        <p className="muted">Loading…</p>
      )}
    </section>
  );
}

function Overview() {
  const access = useAccess();
  const sections = [can(access, 'stats'), can(access, 'status'), can(access, 'devices')];
  return (
    <>
      <h1>Overview</h1>
      {can(access, 'status') && <StatusSection />}
      {can(access, 'stats') && <StatsSection />}
      {can(access, 'devices') && <OwnDevicesSection />}
      {!sections.some(Boolean) && (
        <p className="muted">Your role does not include any overview data.</p>
      )}
    </>
  );
}

export function OverviewPage() {
  return (
    <ConsoleShell>
      <Overview />
    </ConsoleShell>
  );
}
