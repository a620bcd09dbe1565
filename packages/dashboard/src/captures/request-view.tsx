// One capture in full: summary, request and response headers, bodies pretty-printed, the timings
// as a waterfall, TLS on both sides and how the capture was attributed; copy as curl and HAR.
import { useEffect, useState } from 'react';
import { useAppServices } from '../app-context.tsx';
import { BodyView } from './body-view.tsx';
import { CaptureLabels } from './capture-labels.tsx';
import type { CaptureRow, HeaderPair } from './capture-types.ts';
import { toCurl } from './curl.ts';
import { downloadJson } from './download.ts';
import { toHar } from './har.ts';

function Headers(props: { pairs: HeaderPair[] | undefined; testId: string }) {
  if (!props.pairs?.length) return <p className="muted">None.</p>;
  return (
    <table className="table" data-testid={props.testId}>
      <tbody>
        {props.pairs.map(([name, value], index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: headers repeat; wire order is the identity
          <tr key={index}>
            <th scope="row">{name}</th>
            <td>
              <code>{value}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const PHASES = ['connect', 'tls', 'send', 'wait', 'receive'] as const;

function Waterfall(props: { timings: CaptureRow['payload']['timings'] }) {
  const timings = props.timings ?? {};
  const phases = PHASES.map((phase) => ({ phase, ms: timings[phase] ?? -1 })).filter(
    (item) => item.ms >= 0,
  );
  const total = Math.max(1e-6, timings.total ?? phases.reduce((sum, item) => sum + item.ms, 0));
  let offset = 0;
  if (phases.length === 0) return <p className="muted">No timings recorded.</p>;
  return (
    <figure className="chart waterfall" data-testid="timings">
      <svg
        viewBox={`0 0 100 ${phases.length * 6}`}
        preserveAspectRatio="none"
        role="img"
        aria-label="Timings"
      >
        {phases.map((item, index) => {
          const x = (offset / total) * 100;
          offset += item.ms;
          return (
            <rect
              key={item.phase}
              className={`waterfall__${item.phase}`}
              x={Math.min(x, 99.5)}
              y={index * 6 + 1}
              width={Math.max(0.5, (item.ms / total) * 100)}
              height="4"
            />
          );
        })}
      </svg>
      <ul className="legend">
        {phases.map((item) => (
          <li key={item.phase} data-phase={item.phase}>
            <span className={`legend__swatch waterfall__${item.phase}`} aria-hidden="true" />
            {item.phase} {item.ms.toFixed(1)} ms
          </li>
        ))}
        <li>total {(timings.total ?? 0).toFixed(1)} ms</li>
      </ul>
    </figure>
  );
}

function Facts(props: { value: Record<string, unknown> | undefined; testId: string }) {
  if (!props.value) return <p className="muted">None.</p>;
  return (
    <dl className="facts" data-testid={props.testId}>
      {Object.entries(props.value).map(([key, value]) => (
        <div key={key} className="facts__row">
          <dt>{key}</dt>
          <dd>{typeof value === 'object' ? JSON.stringify(value) : String(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** One capture by id; `ts` (when the caller has it) lets Postgres read one weekly partition. */
export function RequestView(props: { id: number; ts?: string }) {
  const { supabase } = useAppServices();
  const [row, setRow] = useState<CaptureRow | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    let current = true;
    setRow(undefined);
    setCopied(false);
    let query = supabase
      .from('entries')
      .select('id,ts,kind,device_uuid,request_id,payload')
      .eq('id', props.id);
    // 001 §4.2 rule 3: with the capture time, partition pruning leaves one weekly partition.
    if (props.ts) query = query.eq('ts', props.ts);
    void query.maybeSingle().then(({ data, error: readError }) => {
      if (!current) return;
      if (readError) setError(readError.message);
      else setRow(data as CaptureRow | null);
    });
    return () => {
      current = false;
    };
  }, [supabase, props.id, props.ts]);
  if (error) return <p className="error">{error}</p>;
  if (row === undefined) return <p className="muted">Loading capture…</p>;
  if (row === null)
    return (
      <p className="muted" data-testid="capture-missing">
        No such capture, or not yours to see.
      </p>
    );
  const p = row.payload;
  const curl = toCurl(p);
  async function copyCurl() {
    try {
      await navigator.clipboard.writeText(curl);
      setCopied(true);
    } catch {
      // Clipboard refused (no permission): the command is on screen to copy by hand.
      setCopied(false);
    }
  }
  return (
    <article
      className="panel"
      data-testid="request-view"
      data-id={row.id}
      aria-label={`Capture ${row.id}`}
    >
      <h2>
        {p.method} {p.statusCode ?? row.kind}
      </h2>
      <p className="request-url">
        <code>{p.url}</code>
      </p>
      <div className="actions">
        <button type="button" className="button--small" onClick={copyCurl} data-testid="copy-curl">
          {copied ? 'Copied' : 'Copy as curl'}
        </button>
        <button
          type="button"
          className="button--small button--secondary"
          onClick={() => downloadJson(toHar([row]), `capture-${row.id}.har`)}
        >
          Export HAR
        </button>
      </div>
      <details>
        <summary>curl command</summary>
        <pre data-testid="curl-command">{curl}</pre>
      </details>
      <CaptureLabels id={row.id} ts={row.ts} />
      <h3>Request headers</h3>
      <Headers pairs={p.requestHeaders} testId="request-headers" />
      <h3>Request body</h3>
      <BodyView body={p.requestBody} label="Request body" testId="request-body" />
      <h3>Response headers</h3>
      <Headers pairs={p.responseHeaders} testId="response-headers" />
      <h3>Response body</h3>
      <BodyView body={p.responseBody} label="Response body" testId="response-body" />
      <h3>Timings</h3>
      <Waterfall timings={p.timings} />
      <h3>TLS</h3>
      <h4>Client side</h4>
      <Facts value={p.tls} testId="tls-client" />
      <h4>Upstream</h4>
      <Facts value={p.upstreamTls} testId="tls-upstream" />
      <h3>Attribution</h3>
      <Facts
        value={{
          ...p.attribution,
          source: p.source,
          listenerPort: p.listenerPort,
          client: p.client?.ip,
        }}
        testId="attribution"
      />
    </article>
  );
}
