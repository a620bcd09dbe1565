// The dashboard's own routes as the assistant links them (docs/assistant.md "Links"): row links
// are built here, and a link the model writes stays a link only when its parsed origin is the
// dashboard's and its parsed path (backslashes read as slashes, dot segments resolved) is one of
// these routes. It is then written anew from the route, never passed on as spelled, so
// `{dashboard_url}//evil.example/…` or `/\evil…` cannot become a protocol-relative href. The
// dashboard checks again before rendering (packages/dashboard/src/dashboard-routes.ts).

/** The console's pages (packages/dashboard/src/app.tsx), each linked by its bare path. */
const PAGES = new Set(['/', '/devices', '/captures', '/breakpoints', '/assistant', '/access']);
const DEVICE = /^\/devices\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const REQUEST = /^\/requests\/([1-9][0-9]{0,17})$/;

/** `{dashboard_url}/devices/<uuid>`: a device on the Devices page. */
export function deviceLink(dashboardUrl: string, uuid: string): string {
  return `${new URL(dashboardUrl).origin}/devices/${uuid.toLowerCase()}`;
}

/** `{dashboard_url}/requests/<id>`: one capture on its own page. */
export function requestLink(dashboardUrl: string, id: number | string): string {
  return `${new URL(dashboardUrl).origin}/requests/${id}`;
}

/** The route a parsed path names, as its canonical path, or null for any other path. */
function routePath(pathname: string): string | null {
  if (PAGES.has(pathname)) return pathname;
  const device = DEVICE.exec(pathname)?.[1];
  if (device) return `/devices/${device.toLowerCase()}`;
  const request = REQUEST.exec(pathname)?.[1];
  return request ? `/requests/${request}` : null;
}

/**
 * The link to write for `url` when it names one of the dashboard's routes: its origin (scheme,
 * host and port, compared parsed) and no user information; query and fragment are dropped.
 * Null for anything else, relative URLs included.
 */
export function dashboardLink(url: string, dashboardUrl: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const origin = new URL(dashboardUrl).origin;
  if (parsed.origin !== origin || parsed.username !== '' || parsed.password !== '') return null;
  const path = routePath(parsed.pathname);
  return path === null ? null : `${origin}${path}`;
}
