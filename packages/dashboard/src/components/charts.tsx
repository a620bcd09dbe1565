// Small SVG charts: a line over time, labelled bars and a stacked mix. Plain SVG keeps the bundle
// small and works under the CSP (no inline styles: colours come from classes in styles.css).
// Each chart also carries its numbers as text (a table or legend), for screen readers and tests.

export type Point = { t: number; v: number };

const WIDTH = 320;
const HEIGHT = 96;

export function LineChart(props: { points: Point[]; label: string; unit: string; testId: string }) {
  const { points } = props;
  const max = Math.max(1e-9, ...points.map((point) => point.v));
  const first = points[0]?.t ?? 0;
  const span = Math.max(1, (points.at(-1)?.t ?? 0) - first);
  const xy = points.map((point) => [
    points.length === 1 ? WIDTH : ((point.t - first) / span) * WIDTH,
    HEIGHT - (point.v / max) * (HEIGHT - 8) - 4,
  ]);
  const latest = points.at(-1)?.v ?? 0;
  return (
    <figure className="chart" data-testid={props.testId} data-latest={latest}>
      <figcaption>
        {props.label}: <strong>{formatNumber(latest)}</strong> {props.unit}
      </figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={props.label}
        preserveAspectRatio="none"
      >
        <line className="chart__axis" x1="0" y1={HEIGHT - 1} x2={WIDTH} y2={HEIGHT - 1} />
        {xy.length > 1 ? (
          <polyline className="chart__line" points={xy.map(([x, y]) => `${x},${y}`).join(' ')} />
        ) : (
          xy.map(([x, y]) => (
            <circle key="only" className="chart__dot" cx={(x ?? 0) - 4} cy={y} r="4" />
          ))
        )}
      </svg>
      <p className="muted chart__note">
        {points.length} sample{points.length === 1 ? '' : 's'} since this page opened, peak{' '}
        {formatNumber(max)}
      </p>
    </figure>
  );
}

export function BarList(props: {
  items: { key: string; label: string; value: number }[];
  label: string;
  testId: string;
}) {
  const max = Math.max(1, ...props.items.map((item) => item.value));
  return (
    <figure className="chart" data-testid={props.testId}>
      <figcaption>{props.label}</figcaption>
      {props.items.length === 0 ? (
        <p className="muted">Nothing in the last 24 h.</p>
      ) : (
        <ol className="bar-list">
          {props.items.map((item) => (
            <li key={item.key} data-label={item.label} data-value={item.value}>
              <span className="bar-list__label">{item.label}</span>
              <svg
                className="bar-list__bar"
                viewBox="0 0 100 10"
                preserveAspectRatio="none"
                aria-hidden="true"
              >
                <rect
                  className="bar-list__fill"
                  x="0"
                  y="0"
                  height="10"
                  width={(item.value / max) * 100}
                />
              </svg>
              <span className="bar-list__value">{formatNumber(item.value)}</span>
            </li>
          ))}
        </ol>
      )}
    </figure>
  );
}

export function MixBar(props: {
  mix: Record<string, number>;
  label: string;
  testId: string;
  names?: Record<string, string>;
}) {
  const entries = Object.entries(props.mix)
    .filter(([, value]) => value > 0)
    .sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((sum, [, value]) => sum + value, 0);
  let offset = 0;
  return (
    <figure className="chart" data-testid={props.testId}>
      <figcaption>{props.label}</figcaption>
      {total === 0 ? (
        <p className="muted">Nothing in the last 24 h.</p>
      ) : (
        <>
          <svg
            className="mix-bar"
            viewBox="0 0 100 8"
            preserveAspectRatio="none"
            role="img"
            aria-label={props.label}
          >
            {entries.map(([key, value], index) => {
              const width = (value / total) * 100;
              const x = offset;
              offset += width;
              return (
                <rect
                  key={key}
                  className={`mix-seg mix-seg--${index % 8}`}
                  x={x}
                  y="0"
                  width={width}
                  height="8"
                />
              );
            })}
          </svg>
          <ul className="legend">
            {entries.map(([key, value], index) => (
              <li key={key} data-key={key} data-value={value}>
                <span className={`legend__swatch mix-seg--${index % 8}`} aria-hidden="true" />
                {props.names?.[key] ?? key}: {formatNumber(value)} (
                {Math.round((value / total) * 100)} %)
              </li>
            ))}
          </ul>
        </>
      )}
    </figure>
  );
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (Math.abs(value) >= 100 || Number.isInteger(value))
    return Math.round(value).toLocaleString('en');
  return value.toFixed(2);
}
