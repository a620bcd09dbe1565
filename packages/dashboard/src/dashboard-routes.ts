// The console routes a link may name (the assistant's row links, docs/assistant.md "Links"):
// parsed from a path into a route, and a route written back as the only path it has. A link
// from text others wrote is followed only as the path rebuilt here, never as it was spelled.
// supabase/functions/ask/dashboard-links.ts applies the same table before an answer leaves.

/** The console's pages (app.tsx), each by its bare path. Sign-in and consent are not linked. */
const PAGES = ['/', '/devices', '/captures', '/breakpoints', '/assistant', '/access'] as const;
const DEVICE = /^\/devices\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const REQUEST = /^\/requests\/([1-9][0-9]{0,17})$/;

export type DashboardRoute =
  | { kind: 'page'; path: (typeof PAGES)[number] }
  | { kind: 'device'; uuid: string }
  | { kind: 'request'; id: string };

/** The route a URL's parsed pathname names, or null. */
export function parseRoutePath(pathname: string): DashboardRoute | null {
  const page = PAGES.find((path) => path === pathname);
  if (page) return { kind: 'page', path: page };
  const uuid = DEVICE.exec(pathname)?.[1];
  if (uuid) return { kind: 'device', uuid: uuid.toLowerCase() };
  const id = REQUEST.exec(pathname)?.[1];
  return id ? { kind: 'request', id } : null;
}

/** The one path of a route: always `/` and a fixed segment, so never `//host` or `/\host`. */
export function routePath(route: DashboardRoute): string {
  if (route.kind === 'page') return route.path;
  if (route.kind === 'device') return `/devices/${route.uuid}`;
  return `/requests/${route.id}`;
}
