// Links in assistant answers as the dashboard renders them (docs/assistant.md "Links"), tried as
// an attacker whose URL starts like a dashboard link but leaves it: only this origin's routes
// become in-app links, with the href rebuilt from the parsed route; the ask function's own filter
// (supabase/functions/ask/dashboard-links.ts) agrees on every case.
import { describe, expect, it } from 'vitest';
import { dashboardLink } from '../../../supabase/functions/ask/dashboard-links.ts';
import { linkTarget } from '../src/components/link-target.ts';
import { parseRoutePath, routePath } from '../src/dashboard-routes.ts';

const ORIGIN = 'http://127.0.0.1:54323';
const UUID = 'd0000000-0000-4000-8000-000000000001';

/** Destinations that begin like a dashboard link (or pretend to) and are no route here. */
const ESCAPES = [
  `${ORIGIN}//evil.example/?d=secret`,
  `${ORIGIN}/\\evil.example/?d=secret`,
  `${ORIGIN}/..//evil.example/?d=secret`,
  `${ORIGIN}/%2F%2Fevil.example/?d=secret`,
  `${ORIGIN}\\\\/evil.example/?d=secret`,
  `${ORIGIN}/devices/..//evil.example/`,
  `ht\ttp://127.0.0.1:54323//evil.example/?d=secret`,
  `HTTP://127.0.0.1:54323//evil.example/?d=secret`,
  `${ORIGIN}/mcp/consent?rid=AAAAAAAAAAAAAAAAAAAA`,
  `${ORIGIN}/sign-in?next=/`,
  `${ORIGIN}/devices/${UUID}/`,
  `${ORIGIN}/requests/0`,
];

/** Destinations that are no link at all: relative, other schemes, user information. */
const INERT = [
  '//evil.example/?d=secret',
  '/\\evil.example/?d=secret',
  `/devices/${UUID}`,
  'javascript:alert(document.cookie)',
  'JAVASCRIPT:alert(1)',
  'java\tscript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  `http://user:pw@127.0.0.1:54323/devices/${UUID}`,
  `https://dash@evil.example/devices/${UUID}`,
  'ftp://evil.example/x',
];

describe('linkTarget', () => {
  it.each(ESCAPES)('keeps %j as text, not a link', (destination) => {
    expect(linkTarget(destination, ORIGIN)).toBeNull();
  });

  it.each(INERT)('keeps %j as text, not a link', (destination) => {
    expect(linkTarget(destination, ORIGIN)).toBeNull();
  });

  it.each([
    [`${ORIGIN}/devices/${UUID}`, `/devices/${UUID}`],
    [`HTTP://127.0.0.1:54323/devices/${UUID.toUpperCase()}?d=x#y`, `/devices/${UUID}`],
    [`${ORIGIN}/requests/4012`, '/requests/4012'],
    [`${ORIGIN}/x/../captures`, '/captures'],
  ])('follows %j in place as the rebuilt path %s', (destination, path) => {
    expect(linkTarget(destination, ORIGIN)).toEqual({ kind: 'route', path });
  });

  it('opens another origin over http(s) in a new tab, with the href as parsed', () => {
    expect(linkTarget('https://docs.example.org/proxy', ORIGIN)).toEqual({
      kind: 'external',
      href: 'https://docs.example.org/proxy',
    });
    // Another port of the same host is another origin, never an in-app route.
    expect(linkTarget(`http://127.0.0.1:8080/devices/${UUID}`, ORIGIN)).toEqual({
      kind: 'external',
      href: `http://127.0.0.1:8080/devices/${UUID}`,
    });
  });

  it('agrees with the ask function on which links are dashboard routes', () => {
    for (const destination of [...ESCAPES, ...INERT, `${ORIGIN}/devices/${UUID}`]) {
      const ours = linkTarget(destination, ORIGIN);
      const theirs = dashboardLink(destination, ORIGIN);
      expect(ours?.kind === 'route' ? `${ORIGIN}${ours.path}` : null, destination).toBe(theirs);
    }
  });
});

describe('dashboard routes', () => {
  it('writes every route back as a path with one leading slash and a fixed first segment', () => {
    for (const path of ['/', '/devices', '/captures', `/devices/${UUID}`, '/requests/7']) {
      const route = parseRoutePath(path);
      expect(route, path).not.toBeNull();
      expect(routePath(route as NonNullable<typeof route>)).toBe(path);
    }
    expect(parseRoutePath('//evil.example')).toBeNull();
  });
});
