// resume_breakpoint through the official MCP client with a token from the real OAuth flow:
// continue and abort as before, and modify with a modified_message in the shapes the proxy
// applies (request: method, url, headers, body; response: status, headers, body). A malformed
// message is refused by the tool's schema, and one naming fields of the other phase by the
// database (22023), each as an invalid_arguments tool error that leaves the breakpoint held.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConnectedClient, connectClient, resultJson } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
/** The member's iPhone (seed). */
const DEVICE = 'd0000000-0000-4000-8000-000000000002';

let db: pg.Client;
let client: ConnectedClient;
let memberId: string;

interface EventRow {
  resumed_at: Date | null;
  resumed_by: string | null;
  resolution: string | null;
  modified_message: unknown;
}

/** A held event as a proxy would write it (no proxy holds it here: only the row matters). */
async function holdEvent(phase: 'request' | 'response'): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `insert into public.breakpoint_events (device_uuid, phase, pattern, method, url, message)
     values ($1, $2, 'api.shop.example/*', 'POST', 'https://api.shop.example/v1/cart',
             '{"method": "POST"}') returning id`,
    [DEVICE, phase],
  );
  return Number(rows[0]?.id);
}

const eventRow = async (id: number) =>
  (
    await db.query<EventRow>(
      'select resumed_at, resumed_by, resolution, modified_message from public.breakpoint_events where id = $1',
      [id],
    )
  ).rows[0];

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  const { rows } = await db.query<{ id: string }>('select id from auth.users where email = $1', [
    DEMO.member.email,
  ]);
  memberId = rows[0]?.id as string;
  const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
  client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
});

afterAll(async () => {
  await client?.close();
  await db?.end();
});

describe('resume_breakpoint', () => {
  it('continues and aborts a held breakpoint, once', async () => {
    for (const resolution of ['continue', 'abort']) {
      const id = await holdEvent('request');
      const result = await client.callTool('resume_breakpoint', { id, resolution });
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ id, resolution });
      expect(await eventRow(id)).toMatchObject({ resolution, resumed_by: memberId });
      const again = await client.callTool('resume_breakpoint', { id, resolution: 'continue' });
      expect(resultJson(again)).toMatchObject({ error: 'not_found' });
    }
  });

  it('modifies a held request: method, url, headers and body are stored for the proxy', async () => {
    const id = await holdEvent('request');
    const modified = {
      method: 'PUT',
      url: '/v1/cart?edited=1',
      headers: [
        ['Content-Type', 'application/json'],
        ['X-Edited', 'yes'],
      ],
      body: '{"items": []}',
    };
    const result = await client.callTool('resume_breakpoint', {
      id,
      resolution: 'modify',
      modified_message: modified,
    });
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({ id, resolution: 'modify' });
    const row = await eventRow(id);
    expect(row).toMatchObject({ resolution: 'modify', resumed_by: memberId });
    expect(row?.modified_message).toEqual(modified);
  });

  it('modifies a held response: status, headers and body', async () => {
    const id = await holdEvent('response');
    const modified = {
      status: 418,
      headers: { 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'] },
      body: { base64: Buffer.from('teapot').toString('base64') },
    };
    const result = await client.callTool('resume_breakpoint', {
      id,
      resolution: 'modify',
      modified_message: modified,
    });
    expect(result.isError ?? false).toBe(false);
    expect((await eventRow(id))?.modified_message).toEqual(modified);
  });

  it('refuses response fields for a request breakpoint (the database says which), and keeps it held', async () => {
    const id = await holdEvent('request');
    const result = await client.callTool('resume_breakpoint', {
      id,
      resolution: 'modify',
      modified_message: { status: 201, body: null },
    });
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toEqual({
      error: 'invalid_arguments',
      message:
        `modified_message does not fit breakpoint ${id}: modified_message of a request ` +
        'breakpoint is an object with only method, url, headers, body.',
    });
    expect((await eventRow(id))?.resumed_at).toBeNull();
  });

  it('refuses request fields for a response breakpoint, and keeps it held', async () => {
    const id = await holdEvent('response');
    const result = await client.callTool('resume_breakpoint', {
      id,
      resolution: 'modify',
      modified_message: { url: '/elsewhere' },
    });
    expect(resultJson(result)).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringContaining('response breakpoint is an object with only status'),
    });
    expect((await eventRow(id))?.resumed_at).toBeNull();
  });

  it.each([
    ['modify without a message', { resolution: 'modify' }, 'modified_message'],
    [
      'a message with continue',
      { resolution: 'continue', modified_message: { body: 'x' } },
      'modified_message',
    ],
    ['an empty message', { resolution: 'modify', modified_message: {} }, 'at least one field'],
    ['an unknown field', { resolution: 'modify', modified_message: { query: 'a=1' } }, 'query'],
    [
      'request and response fields',
      { resolution: 'modify', modified_message: { status: 200, url: '/x' } },
      'a request edit',
    ],
    [
      'a status out of range',
      { resolution: 'modify', modified_message: { status: 700 } },
      'status',
    ],
    [
      'a method that is not a word',
      { resolution: 'modify', modified_message: { method: 'GET /x' } },
      'method',
    ],
    [
      'a header value with a line break',
      { resolution: 'modify', modified_message: { headers: [['X-A', 'a\r\nX-B: b']] } },
      'headers',
    ],
    [
      'a header name that is not a token',
      { resolution: 'modify', modified_message: { headers: { 'X A': 'b' } } },
      'headers',
    ],
    ['a body that is a number', { resolution: 'modify', modified_message: { body: 42 } }, 'body'],
    [
      'a body that is not base64',
      { resolution: 'modify', modified_message: { body: { base64: '!!' } } },
      'body',
    ],
  ])('refuses %s before anything is written', async (_case, args, named) => {
    const id = await holdEvent('request');
    const result = await client.callTool('resume_breakpoint', { id, ...args });
    expect(result.isError).toBe(true);
    const body = resultJson(result);
    expect(body.error).toBe('invalid_arguments');
    expect(body.message).toContain(named);
    expect((await eventRow(id))?.resumed_at).toBeNull();
  });
});
