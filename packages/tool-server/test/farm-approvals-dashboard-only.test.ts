// A deployment that takes farm approvals from the dashboard alone (approvalsInClient off,
// TOOL_SERVER_APPROVALS_IN_CLIENT=off; docs/farm.md "Gating"): a client that declares elicitation
// and would accept any question for its user (as an agent running its own MCP client would) is
// never asked. Its call answers a pending action, runs nothing, and runs once a person approved it
// from a dashboard session.
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideAsPerson, type PendingActionAnswer } from './helpers/farm-approvals.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack({
  proxy: true,
  toolServerSettings: { approvalsInClient: false },
});

let db: pg.Client;
let client: V2Client;
/** Every elicitation the client was sent. */
const asked: string[] = [];

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  const { access_token } = await authorizeAndExchange(stack(), DEMO.admin);
  client = new V2Client(
    { name: 'tests-self-approving', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(String(request.params.message));
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack().mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${access_token}` } },
    }),
  );
}, 60_000);

afterAll(async () => {
  await client?.close();
  await db?.end();
});

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('farm approvals from the dashboard only', () => {
  it('never asks an eliciting client, and runs only after a person approved', async () => {
    const args = { command: 'echo dashboard-only' };
    const first = (await client.callTool({ name: 'farm_run_shell', arguments: args })) as Result;
    expect(asked).toEqual([]);
    expect(first.isError).toBeFalsy();
    const pending = first.structuredContent as unknown as PendingActionAnswer;
    expect(pending).toMatchObject({ status: 'approval_required' });
    expect(pending.approve_at).toMatch(/\/approvals$/);

    // Called again before anyone decided: still waiting, still nothing asked or run.
    const early = (await client.callTool({
      name: 'farm_run_shell',
      arguments: { ...args, pending_action_id: pending.pending_action_id },
    })) as Result;
    expect(early.structuredContent).toMatchObject({ status: 'approval_pending' });
    expect(asked).toEqual([]);
    const { rows: ran } = await db.query(
      `select 1 from public.farm_audit where confirmation_id = $1 and event = 'ran'`,
      [pending.pending_action_id],
    );
    expect(ran).toHaveLength(0);

    await decideAsPerson(stack(), pending.pending_action_id);
    const approved = (await client.callTool({
      name: 'farm_run_shell',
      arguments: { ...args, pending_action_id: pending.pending_action_id },
    })) as Result;
    expect(approved.isError).toBeFalsy();
    expect(approved.structuredContent).toMatchObject({ stdout: 'dashboard-only\n' });
    const { rows: actions } = await db.query(
      'select decision, decided_via from public.farm_pending_actions where id = $1',
      [pending.pending_action_id],
    );
    expect(actions).toEqual([{ decision: 'approved', decided_via: 'dashboard' }]);
    expect(asked).toEqual([]);
  });
});
