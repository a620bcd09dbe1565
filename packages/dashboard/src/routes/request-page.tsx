// `/requests/<id>`: one capture on its own page, the form the assistant links to.
import { RequestView } from '../captures/request-view.tsx';
import { ConsoleShell } from '../console/console-shell.tsx';
import { useLocation } from '../router.ts';

function Request() {
  const { pathname } = useLocation();
  const id = Number(/^\/requests\/(\d{1,18})$/.exec(pathname)?.[1]);
  if (!Number.isSafeInteger(id)) return <p className="muted">Not a capture link.</p>;
  return (
    <>
      <h1>Capture {id}</h1>
      <RequestView id={id} />
    </>
  );
}

export function RequestPage() {
  return (
    <ConsoleShell>
      <Request />
    </ConsoleShell>
  );
}
