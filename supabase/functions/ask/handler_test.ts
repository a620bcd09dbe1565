// Unit tests of the ask handler with PostgREST and the model provider stubbed at fetch level (no
// network): the not-configured answers, the rate limit, the time cap, the step cap, specialist
// routing, and that a token PostgREST refuses never reaches the model.
import { deepStrictEqual as assertEquals, ok } from 'node:assert/strict';
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import OpenAI from 'npm:openai@7.55.0';
import type { Caller } from '../_shared/caller.ts';
import type { AskConfig } from './config.ts';
import { handleAsk } from './handler.ts';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl';
const CALLER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  roles: [{ slug: 'member', name: 'Member', is_admin: false }],
  capabilities: ['devices:view', 'entries:view', 'services:view'],
  is_admin: false,
  token: { jti: null, client_id: null, label: null },
};
const AGENTS = [
  {
    slug: 'traffic-analyst',
    label: 'Traffic analyst',
    instructions: 'Be exact.',
    model: 'm-traffic',
  },
  {
    slug: 'security-reviewer',
    label: 'Security reviewer',
    instructions: 'Find leaks.',
    model: 'm-sec',
  },
];

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
  webSearch: false,
  dashboardUrl: 'http://dash.test',
  redactionKey: new Uint8Array(32),
};

interface Stubs {
  /** A PostgREST answer for a path, or undefined for the harness's default. */
  postgrest?: (path: string, init?: RequestInit) => Response | Promise<Response> | undefined;
  model?: (body: Record<string, unknown>) => Response | Promise<Response>;
}

function sse(events: Array<Record<string, unknown>>, delayMs = 0): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const [index, event] of events.entries()) {
        if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
        controller.enqueue(
          encoder.encode(
            `event: ${event.type}\ndata: ${
              JSON.stringify({ ...event, sequence_number: index })
            }\n\n`,
          ),
        );
      }
      controller.close();
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

const completed = (output: unknown[]) => ({
  type: 'response.completed',
  response: { id: 'r', object: 'response', status: 'completed', output, model: 'm' },
});
const message = (text: string) => ({
  type: 'message',
  id: 'm1',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text, annotations: [] }],
});
const textEvents = (text: string) => [
  {
    type: 'response.output_text.delta',
    item_id: 'm1',
    output_index: 0,
    content_index: 0,
    delta: text,
  },
  { type: 'response.output_item.done', output_index: 0, item: message(text) },
  completed([message(text)]),
];
const callEvents = (name: string) => {
  const item = {
    type: 'function_call',
    id: 'fc',
    call_id: 'c1',
    name,
    arguments: '{}',
    status: 'completed',
  };
  return [{ type: 'response.output_item.done', output_index: 0, item }, completed([item])];
};

function harness(stubs: Stubs, config: Partial<AskConfig> = {}) {
  const modelBodies: Array<Record<string, unknown>> = [];
  const postgrestPaths: string[] = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
    postgrestPaths.push(path);
    if (path === '/rest/v1/rpc/whoami') return Response.json(CALLER);
    const stubbed = await stubs.postgrest?.(path, init);
    if (stubbed) return stubbed;
    if (path === '/rest/v1/rpc/assistant_take_turn') return Response.json(9);
    if (path === '/rest/v1/assistant_agents') return Response.json(AGENTS);
    return Response.json([]);
  }) as typeof globalThis.fetch;
  const modelFetch = ((_input: RequestInfo | URL, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as Record<string, unknown>;
    modelBodies.push(body);
    return Promise.resolve(stubs.model?.(body) ?? sse(textEvents('fine')));
  }) as typeof globalThis.fetch;
  const deps = {
    config: { ...CONFIG, ...config },
    fetch,
    createModel: (c: AskConfig, apiKey: string) =>
      new OpenAI({ apiKey, baseURL: c.openaiBaseUrl, maxRetries: 0, fetch: modelFetch }),
  };
  return { deps, modelBodies, postgrestPaths };
}

function ask(body: unknown, stream = false): Request {
  return new Request('http://functions.test/ask', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  });
}

Deno.test('answers 503 not_configured without a provider key, and an error event when streaming', async () => {
  const { deps, modelBodies } = harness({}, { openaiApiKey: undefined });
  const blocking = await handleAsk(ask({ question: 'hi' }), deps);
  assertEquals(blocking.status, 503);
  assertEquals((await blocking.json()).error, 'not_configured');
  const streamed = await handleAsk(ask({ question: 'hi' }, true), deps);
  assertEquals(streamed.status, 200);
  const text = await streamed.text();
  ok(text.startsWith('event: error\ndata: {"message":"The assistant is not configured'), text);
  assertEquals(modelBodies.length, 0);
});

Deno.test('spends no rate-limit turn when the provider is not configured', async () => {
  // Regression: the turn was taken before the key check, so every 503 cost the user a question.
  const { deps, postgrestPaths } = harness({}, { openaiApiKey: undefined });
  for (const stream of [false, true]) {
    const response = await handleAsk(ask({ question: 'hi' }, stream), deps);
    await response.text();
  }
  assertEquals(postgrestPaths.filter((path) => path.endsWith('/assistant_take_turn')), []);
});

Deno.test('answers 504 when the time cap fires while the agent registry is read (blocking)', async () => {
  // Regression: the abort escaped loadAgents as a throw, and the blocking handler answered an
  // unhandled 500. The registry read here hangs until its signal aborts, as a slow PostgREST
  // would, so only the time cap can end it.
  const { deps, modelBodies } = harness(
    {
      postgrest: (path, init) =>
        path === '/rest/v1/assistant_agents'
          ? new Promise<Response>((_resolve, reject) => {
            const signal = init?.signal;
            const fail = () => reject(signal?.reason ?? new DOMException('aborted', 'AbortError'));
            if (signal?.aborted) fail();
            signal?.addEventListener('abort', fail, { once: true });
          })
          : undefined,
    },
    { timeLimitMs: 300 },
  );
  const response = await handleAsk(ask({ question: 'hi' }), deps);
  assertEquals(response.status, 504);
  assertEquals((await response.json()).error, 'unavailable');
  assertEquals(modelBodies.length, 0);
  const streamed = await handleAsk(ask({ question: 'hi' }, true), deps);
  const text = await streamed.text();
  ok(text.includes('event: error\ndata: {"message":"The question took longer'), text);
});

Deno.test('answers 429 rate_limited with Retry-After past the per-user limit', async () => {
  const { deps, modelBodies } = harness({});
  deps.fetch = ((input: RequestInfo | URL) => {
    const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
    if (path === '/rest/v1/rpc/whoami') return Promise.resolve(Response.json(CALLER));
    return Promise.resolve(
      Response.json({ code: 'PT429', message: 'too many questions' }, { status: 429 }),
    );
  }) as typeof globalThis.fetch;
  const response = await handleAsk(ask({ question: 'hi' }), deps);
  assertEquals(response.status, 429);
  assertEquals(response.headers.get('retry-after'), '60');
  assertEquals((await response.json()).error, 'rate_limited');
  assertEquals(modelBodies.length, 0);
});

Deno.test('answers 401 unauthorized when PostgREST refuses the token, before any model call', async () => {
  const { deps, modelBodies } = harness({});
  deps.fetch = (() =>
    Promise.resolve(
      Response.json({ code: 'PGRST301', message: 'JWT expired' }, { status: 401 }),
    )) as typeof globalThis.fetch;
  const response = await handleAsk(ask({ question: 'hi' }), deps);
  assertEquals(response.status, 401);
  assertEquals(await response.json(), { error: 'unauthorized', message: 'JWT expired' });
  assertEquals(response.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
  assertEquals(modelBodies.length, 0);
});

Deno.test('ends with a friendly error event when the time cap passes mid-answer', async () => {
  const { deps } = harness(
    { model: () => sse(textEvents('slow'), 400) },
    { timeLimitMs: 1_000 },
  );
  const response = await handleAsk(ask({ question: 'hi' }, true), deps);
  const text = await response.text();
  ok(text.includes('event: error\ndata: {"message":"The question took longer'), text);
  ok(!text.includes('event: done'), text);
});

Deno.test('stops the tool loop at the step cap, the last call forbidding tools', async () => {
  const { deps, modelBodies } = harness({ model: () => sse(callEvents('list_devices')) });
  const response = await handleAsk(ask({ question: 'loop forever' }), deps);
  assertEquals(response.status, 200);
  assertEquals(modelBodies.length, CONFIG.maxSteps);
  assertEquals(modelBodies.map((body) => body.tool_choice), ['auto', 'auto', 'none']);
  ok(modelBodies.every((body) => body.store === false));
});

Deno.test('routes to a specialist agent named with @slug or by its words, else the default', async () => {
  for (
    const [question, model, instructions] of [
      ['@security-reviewer look at request 5', 'm-sec', 'Find leaks.'],
      ['Why is the traffic of my Pixel slow?', 'm-traffic', 'Be exact.'],
      ['Hello there', 'm-default', undefined],
    ] as const
  ) {
    const { deps, modelBodies } = harness({});
    const response = await handleAsk(ask({ question }), deps);
    assertEquals(response.status, 200);
    assertEquals(modelBodies[0]?.model, model);
    const system = String(modelBodies[0]?.instructions);
    if (instructions) ok(system.includes(instructions), system);
    else ok(!system.includes('acting as the specialist'), system);
  }
});

Deno.test('offers web_search when enabled, says so while it runs, and keeps only cited links', async () => {
  const text = 'Per [the guide](https://docs.test/pac) and [a blog](https://blog.test/x).';
  const search = {
    type: 'web_search_call',
    id: 'ws1',
    status: 'completed',
    action: { type: 'search' },
  };
  const answer = {
    ...message(text),
    content: [{
      type: 'output_text',
      text,
      annotations: [{
        type: 'url_citation',
        url: 'https://docs.test/pac',
        title: 'PAC guide',
        start_index: 4,
        end_index: 40,
      }],
    }],
  };
  const { deps, modelBodies } = harness(
    {
      model: () =>
        sse([
          { type: 'response.web_search_call.in_progress', output_index: 0, item_id: 'ws1' },
          { type: 'response.output_item.done', output_index: 0, item: search },
          ...textEvents(text).slice(0, 1),
          { type: 'response.output_item.done', output_index: 1, item: answer },
          completed([search, answer]),
        ]),
    },
    { webSearch: true },
  );
  const response = await handleAsk(ask({ question: 'how do PAC files work?' }, true), deps);
  const body = await response.text();
  ok((modelBodies[0]?.tools as Array<{ type: string }>).some((tool) => tool.type === 'web_search'));
  ok(body.includes('event: tool\ndata: {"label":"Searching the web"}'), body);
  const done = /event: done\ndata: (.*)\n/.exec(body)?.[1] ?? '{}';
  const final = (JSON.parse(done) as { answer: string }).answer;
  ok(final.startsWith('Per [the guide](https://docs.test/pac) and a blog.'), final);
  ok(final.includes('**Sources**\n- [PAC guide](https://docs.test/pac)'), final);
});
