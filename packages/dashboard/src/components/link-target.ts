// Where a link in an assistant answer may lead (docs/assistant.md "Links"). The destination is
// text the model wrote, so it is parsed as an absolute URL and the href is built from the parse:
// one of this dashboard's routes at this origin (followed in place), or an http(s) page elsewhere
// (a cited source, in a new tab). Relative references (`//host`, `/\host`), user information and
// every other scheme stay text.
import { parseRoutePath, routePath } from '../dashboard-routes.ts';

export type LinkTarget = { kind: 'route'; path: string } | { kind: 'external'; href: string };

export function linkTarget(destination: string, origin: string): LinkTarget | null {
  let url: URL;
  try {
    // No base: a relative reference is no link at all.
    url = new URL(destination);
  } catch {
    return null;
  }
  if (url.username !== '' || url.password !== '') return null;
  if (url.origin === origin) {
    const route = parseRoutePath(url.pathname);
    return route ? { kind: 'route', path: routePath(route) } : null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  return { kind: 'external', href: url.href };
}
