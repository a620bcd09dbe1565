// A captured body, pretty-printed by content type: JSON indented, form data as a table, text as
// is, binary as its size. Bodies are shown as text nodes only (never as HTML), whatever they hold.
import type { CaptureBody } from './capture-types.ts';
import { prettyBody } from './pretty-body.ts';

export function BodyView(props: { body: CaptureBody | undefined; label: string; testId: string }) {
  const { body } = props;
  if (!body || (body.text === undefined && body.base64 === undefined) || body.size === 0) {
    return <p className="muted">No {props.label.toLowerCase()}.</p>;
  }
  const note = [
    body.contentType,
    `${body.size ?? '?'} bytes`,
    body.decoded ? `decoded from ${body.contentEncoding}` : null,
    body.truncated ? 'truncated at the capture limit' : null,
  ]
    .filter(Boolean)
    .join(' · ');
  if (body.base64 !== undefined) {
    return (
      <div data-testid={props.testId} data-kind="binary">
        <p className="muted">{note}: binary, not shown.</p>
      </div>
    );
  }
  const pretty = prettyBody(body.text ?? '', body.contentType ?? '');
  return (
    <div data-testid={props.testId} data-kind={pretty.kind}>
      <p className="muted">{note}</p>
      <pre>{pretty.text}</pre>
    </div>
  );
}
