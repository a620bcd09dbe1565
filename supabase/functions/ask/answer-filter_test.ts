// Unit tests of the answer filter: links only to the dashboard or cited sources, no images, raw
// HTML escaped, and streamed deltas that always add up to the final answer.
import { deepStrictEqual as assertEquals, ok } from 'node:assert/strict';
import { createRedactor } from '../_shared/redaction.ts';
import { createAnswerFilter, filterLinks } from './answer-filter.ts';
import { dashboardLink } from './dashboard-links.ts';

const DASHBOARD = 'http://dash.test';
const DEVICE = 'b0000000-0000-4000-8000-000000000001';
const allowed = (url: string) =>
  dashboardLink(url, DASHBOARD) ?? (url === 'https://cited.test/a' ? url : null);

Deno.test('keeps dashboard and cited links, strips others to their label', () => {
  assertEquals(
    filterLinks(
      `[Device](${DASHBOARD}/devices/${DEVICE}) [doc](https://cited.test/a) [click](https://evil.test/x?d=1)`,
      allowed,
    ),
    `[Device](${DASHBOARD}/devices/${DEVICE}) [doc](https://cited.test/a) click`,
  );
});

Deno.test('never renders images, even from allowed hosts', () => {
  assertEquals(
    filterLinks(`![x](https://evil.test/p?secret=1) ![](${DASHBOARD}/a.png)`, allowed),
    '(image: x) (image)',
  );
});

Deno.test('turns bare URLs that are not allowed into inline code and escapes raw HTML', () => {
  assertEquals(
    filterLinks('see https://evil.test/leak?x=1 and <img src=https://e.test/a>', allowed),
    'see `https://evil.test/leak?x=1` and &lt;img src=`https://e.test/a`&gt;',
  );
});

Deno.test('defuses scheme-less www. autolinks and protocol-relative links', () => {
  assertEquals(
    filterLinks(
      'go to www.evil.test/x?d=1 or [here](//evil.test/p) ![](//evil.test/i.png)',
      allowed,
    ),
    'go to `www.evil.test/x?d=1` or here (image)',
  );
});

Deno.test('streams whole lines whose concatenation is the final answer, redacted', async () => {
  const redactor = createRedactor({ key: new TextEncoder().encode('k'.repeat(32)) });
  const filter = createAnswerFilter({
    redact: (t) => redactor.redactText(t),
    linkTarget: allowed,
  });
  const token = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  const parts = ['The token ', token.slice(0, 10), token.slice(10), ' was sent.\nNext ', 'line'];
  let streamed = '';
  for (const part of parts) streamed += await filter.push(part);
  const { answer, rest } = await filter.finish('\n\nfooter');
  streamed += rest;
  assertEquals(streamed, answer);
  ok(!answer.includes(token.slice(4)), answer);
  ok(answer.includes('[redacted:'), answer);
  ok(answer.endsWith('footer'));
});

Deno.test('holds a PEM block back until it is complete', async () => {
  const redactor = createRedactor({ key: new TextEncoder().encode('k'.repeat(32)) });
  const filter = createAnswerFilter({
    redact: (t) => redactor.redactText(t),
    linkTarget: allowed,
  });
  const out = await filter.push(
    'Key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n',
  );
  assertEquals(out, 'Key:\n');
});
