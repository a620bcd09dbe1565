// The farm's approval gate tried as the agent would (001 §4.1: destructive tools are
// confirm-gated; docs/farm.md "Gating"), through the MCP SDK client and the REST API with real
// OAuth tokens on the repo stack: an agent (or a prompt injection steering it) that presents its
// own pending action, approves it over REST with its OAuth token or the dashboard's first-party
// token, turns its token into a dashboard session, redeems an approval from another OAuth client
// of the same user, or forges an elicitation answer for it. Only the owner's dashboard session approves, and the run is the
// asking client's.
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askFor, decideAsPerson, patchDecision, sessionOf } from './helpers/farm-approvals.ts';
import { type ConnectedClient, connectClient, resultJson } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack({ proxy: true });

let db: pg.Client;
let agent: ConnectedClient;
let agentToken = '';

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  ({ access_token: agentToken } = await authorizeAndExchange(stack(), DEMO.admin));
  agent = await connectClient('v2-modern', stack().mcpUrl, agentToken);
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await db?.end();
});

async function actionRow(id: string) {
  const { rows } = await db.query<{ decision: string | null; used_at: Date | null }>(
    'select decision, used_at from public.farm_pending_actions where id = $1',
    [id],
  );
  return rows[0];
}

async function ranRowsFor(id: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n from public.farm_audit where confirmation_id = $1 and event = 'ran'`,
    [id],
  );
  return rows[0]?.n ?? 0;
}

describe('the agent approving its own call', () => {
  it('runs nothing when the agent presents its own pending action, however often', async () => {
    const args = { command: 'echo self-approved' };
    const { pending_action_id } = await askFor(agent, 'farm_run_shell', args);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const retry = await agent.callTool('farm_run_shell', { ...args, pending_action_id });
      expect(retry.isError).toBeFalsy();
      expect(retry.structuredContent).toMatchObject({
        status: 'approval_pending',
        pending_action_id,
      });
      expect(JSON.stringify(retry.structuredContent)).not.toContain('self-approved\n');
    }
    expect(await actionRow(pending_action_id)).toEqual({ decision: null, used_at: null });
    expect(await ranRowsFor(pending_action_id)).toBe(0);
  });

  it('cannot approve it over REST with its OAuth token, nor with a first-party token', async () => {
    const args = { command: 'echo approved-by-the-agent' };
    const { pending_action_id } = await askFor(agent, 'farm_run_shell', args);
    // The agent can read what awaits a person, with the same token…
    const read = await fetch(
      `${stack().apiUrl}/rest/v1/farm_pending_actions?id=eq.${pending_action_id}&select=id`,
      { headers: { apikey: agentToken, authorization: `Bearer ${agentToken}` } },
    );
    expect(await read.json()).toEqual([{ id: pending_action_id }]);
    // …but not decide it: the policy's check refuses every token but a dashboard session.
    const byAgent = await patchDecision(stack(), agentToken, pending_action_id, 'approved');
    expect(byAgent.status).toBe(403);
    expect(await byAgent.json()).toMatchObject({ code: '42501' });
    // The dashboard's own exchange (POST /first-party-token) is an OAuth-type token too.
    const exchanged = await fetch(`${stack().mcpUrl}/first-party-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await sessionOf(stack())}` },
    });
    const { access_token: firstParty } = (await exchanged.json()) as { access_token: string };
    const byFirstParty = await patchDecision(stack(), firstParty, pending_action_id, 'approved');
    expect(byFirstParty.status).toBe(403);
    expect(await actionRow(pending_action_id)).toEqual({ decision: null, used_at: null });
    const retry = await agent.callTool('farm_run_shell', { ...args, pending_action_id });
    expect(retry.structuredContent).toMatchObject({ status: 'approval_pending' });
    expect(await ranRowsFor(pending_action_id)).toBe(0);
  });

  it('cannot turn its OAuth token into a dashboard session', async () => {
    // Not by the dashboard's exchange, which takes a session…
    const exchange = await fetch(`${stack().mcpUrl}/first-party-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentToken}` },
    });
    expect(exchange.status).toBe(401);
    // …nor by setting the account's password to sign in with it: the auth service's user
    // routes need a token naming a session, as GoTrue's do.
    const password = await fetch(`${stack().apiUrl}/auth/v1/user`, {
      method: 'PUT',
      headers: {
        apikey: stack().keys.publishableKey,
        authorization: `Bearer ${agentToken}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ password: 'chosen-by-the-agent' }),
    });
    expect(password.status).toBe(403);
    const signIn = await fetch(`${stack().apiUrl}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: stack().keys.publishableKey, 'content-type': 'application/json' },
      body: JSON.stringify({ email: DEMO.admin.email, password: 'chosen-by-the-agent' }),
    });
    expect(signIn.status).toBe(400);
  });
});

describe('the person in the dashboard', () => {
  it("approves from the owner's session only, and the asking client then runs it", async () => {
    const args = { command: 'echo approved-by-a-person' };
    const { pending_action_id } = await askFor(agent, 'farm_run_shell', args);
    // Another user's session may not: a member without the farm is refused outright (another
    // farm user does not even see it: pgTAP 56-farm-pending-actions.sql).
    const byMember = await patchDecision(
      stack(),
      await sessionOf(stack(), DEMO.member),
      pending_action_id,
      'approved',
    );
    expect(byMember.status).toBe(403);
    expect(await actionRow(pending_action_id)).toEqual({ decision: null, used_at: null });
    await decideAsPerson(stack(), pending_action_id);
    const ran = await agent.callTool('farm_run_shell', { ...args, pending_action_id });
    expect(ran.isError).toBeFalsy();
    expect(ran.structuredContent).toMatchObject({ stdout: 'approved-by-a-person\n' });
    expect(await ranRowsFor(pending_action_id)).toBe(1);
  });

  it('approves for the OAuth client that asked, not another client of the same user', async () => {
    const args = { command: 'echo for-the-asking-client' };
    const { pending_action_id } = await askFor(agent, 'farm_run_shell', args);
    await decideAsPerson(stack(), pending_action_id);
    const { access_token } = await authorizeAndExchange(stack(), DEMO.admin);
    const other = await connectClient('v2-modern', stack().mcpUrl, access_token);
    try {
      const taken = await other.callTool('farm_run_shell', { ...args, pending_action_id });
      expect(taken.isError).toBe(true);
      expect(resultJson(taken)).toMatchObject({
        error: 'confirmation_refused',
        message: 'This pending action is not valid. Call the tool again without it to ask again.',
      });
      const { rows } = await db.query<{ reason: string }>(
        `select outcome ->> 'reason' as reason from public.farm_audit
          where tool = 'farm_run_shell' order by id desc limit 1`,
      );
      expect(rows).toEqual([{ reason: 'confirmation_other_client' }]);
      expect(await ranRowsFor(pending_action_id)).toBe(0);
    } finally {
      await other.close();
    }
    // The attempt did not spend it: the client that asked runs it.
    const ran = await agent.callTool('farm_run_shell', { ...args, pending_action_id });
    expect(ran.structuredContent).toMatchObject({ stdout: 'for-the-asking-client\n' });
  });
});

describe('an elicitation answer', () => {
  it("cannot approve another client's pending action, however it is forged", async () => {
    const args = { command: 'echo approved-by-a-forged-answer' };
    const { pending_action_id } = await askFor(agent, 'farm_run_shell', args);
    // Another client of the same user declares elicitation and sends, unasked, the retry of an
    // accepted elicitation naming the first client's action as its request state.
    const { access_token } = await authorizeAndExchange(stack(), DEMO.admin);
    const forger = new V2Client(
      { name: 'tests-forger', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
    );
    await forger.connect(
      new StreamableHTTPClientTransport(new URL(stack().mcpUrl), {
        requestInit: { headers: { authorization: `Bearer ${access_token}` } },
      }),
    );
    try {
      for (const requestState of [pending_action_id, 'not-an-id']) {
        const forged = (await forger.callTool({
          name: 'farm_run_shell',
          arguments: args,
          inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
          requestState,
        } as Parameters<typeof forger.callTool>[0])) as {
          isError?: boolean;
          content: Array<{ text?: string }>;
        };
        expect(forged.isError).toBe(true);
        expect(JSON.parse(String(forged.content[0]?.text))).toMatchObject({
          error: 'confirmation_refused',
        });
      }
      const { rows } = await db.query<{ reason: string }>(
        `select outcome ->> 'reason' as reason from public.farm_audit
          where tool = 'farm_run_shell' order by id desc limit 2`,
      );
      expect(rows.map((row) => row.reason)).toEqual([
        'confirmation_unknown',
        'confirmation_other_client',
      ]);
    } finally {
      await forger.close();
    }
    expect(await actionRow(pending_action_id)).toEqual({ decision: null, used_at: null });
    expect(await ranRowsFor(pending_action_id)).toBe(0);
  });
});
