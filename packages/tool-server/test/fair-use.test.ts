// Fair use of tools/call (docs/tool-server.md "Fair use") on a real stack with its default limits,
// through raw MCP POSTs and the official SDK clients: a member flooding inspect_requests searches
// gets 429 with Retry-After beyond its limits while an admin's concurrent calls all succeed and
// REST keeps answering; the SDK clients surface the 429 with its wait and recover after it; and a
// revoked token's flood cannot spend its account's budget. Outcomes are asserted, never timings.
import { SdkHttpError } from '@modelcontextprotocol/client';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_KINDS, connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
let db: pg.Client;

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
});

let nextId = 0;

/** One tools/call as an agent's HTTP client posts it (2025-era, stateless after initialize). */
async function postToolCall(token: string, name: string, args: Record<string, unknown>) {
  const id = ++nextId;
  const response = await fetch(`${stack().mcpUrl}/`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args },
    }),
  });
  const text = await response.text();
  // A JSON answer, or the one message of an SSE answer.
  const json = text.startsWith('{') ? text : (/^data: (\{.*\})$/m.exec(text)?.[1] ?? 'null');
  return {
    id,
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: JSON.parse(json) as {
      id?: number;
      result?: { isError?: boolean; content?: Array<{ text?: string }> };
      error?: { code: number; message: string; data?: { error?: string; retry_after?: number } };
    },
  };
}

type Answer = Awaited<ReturnType<typeof postToolCall>>;

function expectTooManyRequests(answer: Answer) {
  expect(answer.status).toBe(429);
  const wait = Number(answer.retryAfter);
  expect(Number.isInteger(wait) && wait >= 1).toBe(true);
  expect(answer.body).toMatchObject({
    id: answer.id,
    error: { code: -32029, data: { error: 'too_many_requests', retry_after: wait } },
  });
}

/** The status and body an SDK client's error carries for a refused POST. */
function httpFailureOf(error: unknown): { status: number; body: string } {
  if (error instanceof SdkHttpError) {
    return { status: error.status ?? 0, body: String((error.data as { text?: unknown }).text) };
  }
  if (error instanceof StreamableHTTPError) {
    return { status: error.code ?? 0, body: error.message };
  }
  throw error;
}

describe('a member flooding inspect_requests', () => {
  it("gets 429 with Retry-After beyond its limits while an admin's concurrent calls all succeed", async () => {
    const member = (await authorizeAndExchange(stack(), DEMO.member)).access_token;
    const viewer = (await authorizeAndExchange(stack(), DEMO.viewer)).access_token;
    const admin = await connectClient(
      'v2-legacy',
      stack().mcpUrl,
      (await authorizeAndExchange(stack(), DEMO.admin)).access_token,
    );
    const flood: Answer[] = [];
    const adminResults: Array<{ isError?: boolean }> = [];
    const restStatuses: number[] = [];
    let flooding = true;
    try {
      await Promise.all([
        (async () => {
          // Three waves of 500 concurrent searches from one member, as in the report.
          for (let wave = 0; wave < 3; wave += 1) {
            flood.push(
              ...(await Promise.all(
                Array.from({ length: 500 }, () =>
                  postToolCall(member, 'inspect_requests', { search: 'checkout', limit: 50 }),
                ),
              )),
            );
          }
          flooding = false;
        })(),
        (async () => {
          // Three waves of eight concurrent calls (the per-token limit) from an admin's agent.
          for (let wave = 0; wave < 3; wave += 1) {
            adminResults.push(
              ...(await Promise.all([
                admin.callTool('inspect_requests', { search: 'checkout', limit: 20 }),
                admin.callTool('inspect_requests', { limit: 20 }),
                admin.callTool('list_devices'),
                admin.callTool('get_stats'),
                admin.callTool('list_tags'),
                admin.callTool('list_workspaces'),
                admin.callTool('list_breakpoints'),
                admin.callTool('inspect_requests', { search: 'api', limit: 5 }),
              ])),
            );
          }
        })(),
        (async () => {
          // Another user's REST reads through PostgREST while the flood lasts.
          do {
            const response = await fetch(`${stack().apiUrl}/rest/v1/devices?select=uuid`, {
              headers: { apikey: stack().keys.publishableKey, authorization: `Bearer ${viewer}` },
            });
            restStatuses.push(response.status);
            await response.body?.cancel();
          } while (flooding);
        })(),
      ]);
    } finally {
      await admin.close();
    }

    // The admin was not cut off as "data store unavailable", and REST kept answering.
    expect(adminResults).toHaveLength(24);
    expect(adminResults.filter((result) => result.isError)).toEqual([]);
    expect(restStatuses.length).toBeGreaterThan(0);
    expect(restStatuses.filter((status) => status !== 200)).toEqual([]);

    const refused = flood.filter((answer) => answer.status === 429);
    const answered = flood.filter((answer) => answer.status === 200);
    expect(refused.length + answered.length).toBe(flood.length);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) expectTooManyRequests(answer);
    // What was admitted ran to a result.
    expect(answered.length).toBeGreaterThan(0);
    for (const answer of answered) expect(answer.body.result?.isError ?? false).toBe(false);
  }, 180_000);
});

describe('what the SDK clients surface', () => {
  it.each(CLIENT_KINDS)(
    '%s rejects a call over the limit with status 429 and the wait, and the next call succeeds',
    async (kind) => {
      const token = (await authorizeAndExchange(stack(), DEMO.viewer)).access_token;
      const client = await connectClient(kind, stack().mcpUrl, token);
      // The token's eight calls in flight, held by a lock the test owns: the ninth is over the
      // per-token limit for as long as the test holds it, whatever the machine's speed.
      const lock = new pg.Client({ connectionString: stack().dbUrl });
      await lock.connect();
      try {
        await lock.query('begin');
        await lock.query('lock table public.tags in access exclusive mode');
        const held = Array.from({ length: 8 }, () => postToolCall(token, 'list_tags', {}));
        while (
          Number(
            (
              await db.query<{ waiting: string }>(
                `select count(*) as waiting from pg_stat_activity
                  where application_name = 'tool-server' and wait_event_type = 'Lock'`,
              )
            ).rows[0]?.waiting,
          ) < 8
        ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const refusal = await client.callTool('list_tags').then(
          () => {
            throw new Error('the ninth call in flight was admitted');
          },
          (error: unknown) => httpFailureOf(error),
        );
        expect(refusal.status).toBe(429);
        const body = JSON.parse(refusal.body.slice(refusal.body.indexOf('{'))) as {
          error: { data: { limit: string; retry_after: number } };
        };
        expect(body.error.data).toEqual({
          error: 'too_many_requests',
          limit: 'token_concurrency',
          retry_after: 1,
        });

        await lock.query('rollback');
        for (const answer of await Promise.all(held)) {
          expect(answer.body.result?.isError ?? false).toBe(false);
        }
        // As a client should: wait as told, then call again on the same connection.
        await new Promise((resolve) => setTimeout(resolve, body.error.data.retry_after * 1000));
        expect((await client.callTool('list_tags')).isError ?? false).toBe(false);
      } finally {
        await lock.end();
        await client.close();
      }
    },
    60_000,
  );
});

describe('a revoked token', () => {
  it("cannot spend its account's budget by flooding", async () => {
    const revoked = (await authorizeAndExchange(stack(), DEMO.admin)).access_token;
    const live = (await authorizeAndExchange(stack(), DEMO.admin)).access_token;
    const { jti } = JSON.parse(Buffer.from(revoked.split('.')[1] ?? '', 'base64url').toString());
    await db.query('update public.api_tokens set revoked_at = now() where jti = $1', [jti]);

    const flood = await Promise.all(
      Array.from({ length: 200 }, () => postToolCall(revoked, 'list_tags', {})),
    );
    expect(flood.filter((answer) => answer.status !== 401 && answer.status !== 429)).toEqual([]);
    expect(flood.filter((answer) => answer.status === 401).length).toBeGreaterThan(0);

    // The admin's budget is what the earlier test left of it (50 less its 24 calls, and more with
    // time): 20 calls in waves within the per-token limit all pass.
    const calls: Answer[] = [];
    for (let wave = 0; wave < 4; wave += 1) {
      calls.push(
        ...(await Promise.all(
          Array.from({ length: 5 }, () => postToolCall(live, 'list_tags', {})),
        )),
      );
    }
    expect(calls.map((answer) => answer.status)).toEqual(Array(20).fill(200));
  }, 60_000);
});
