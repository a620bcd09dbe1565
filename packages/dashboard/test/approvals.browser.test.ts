// The Approvals page in Chromium against a started stack with a farm (001 §4.1 "confirm-gated";
// docs/farm.md "Gating"): an MCP client with an OAuth token asks to run a command, and the request
// appears on the admin's page over Realtime with exactly what would run and the client's name;
// the client's own retries run nothing; Approve lets that client run it once, Deny refuses it, and
// the page follows each outcome live, on the person's private topic `approvals:<user id>`, which
// no other user may join (docs/realtime.md "Private channels"). A role without the farm gets no
// page.
import { randomUUID } from 'node:crypto';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { describe, expect, it } from 'vitest';
import { type ConnectedClient, connectClient } from '../../tool-server/test/helpers/mcp-clients.ts';
import { authorizeAndExchange } from '../../tool-server/test/helpers/oauth-stack.ts';
import { setUpBrowser } from './helpers/browser.ts';
import { collectErrors, signInAs } from './helpers/console.ts';
import { DEMO, setUpDashboardStack } from './helpers/dashboard-stack.ts';

const dashboard = setUpDashboardStack();
const browsers = setUpBrowser();

/** An MCP client as an agent holds it: the admin consented, its token is an OAuth token. */
async function agentClient(): Promise<ConnectedClient> {
  const { access_token } = await authorizeAndExchange(dashboard().stack, DEMO.admin);
  return connectClient('v2-modern', dashboard().stack.mcpUrl, access_token);
}

async function ask(agent: ConnectedClient, command: string) {
  const first = await agent.callTool('farm_run_shell', { command });
  expect(first.isError).toBeFalsy();
  const answer = first.structuredContent as {
    status: string;
    pending_action_id: string;
    would_run: string;
    approve_at: string;
  };
  expect(answer.status).toBe('approval_required');
  expect(answer.approve_at).toBe(`${dashboard().dashboardUrl}/approvals`);
  return answer;
}

const NO_SESSION = { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false };

/** A supabase-js client signed in with a demo login, as a script of that person would hold it. */
async function signedInClient(login: { email: string; password: string }) {
  const { stack } = dashboard();
  const client = createClient(stack.apiUrl, stack.keys.publishableKey, { auth: NO_SESSION });
  const { data, error } = await client.auth.signInWithPassword(login);
  if (error || !data.user) throw new Error(`sign-in failed: ${error?.message}`);
  return { client, userId: data.user.id };
}

/** A pending action of `userId` written as the tool server writes one (service role). */
async function insertPendingAction(userId: string, wouldRun: string): Promise<string> {
  const { stack } = dashboard();
  const service = createClient(stack.apiUrl, stack.keys.serviceRoleKey, { auth: NO_SESSION });
  const jti = `approvals-test-${randomUUID()}`;
  const token = await service.from('api_tokens').insert({
    jti,
    user_id: userId,
    label: 'approvals test',
    client_id: 'approvals-test',
    expires_at: new Date(Date.now() + 3_600_000).toISOString(),
  });
  if (token.error) throw new Error(`api_tokens insert failed: ${token.error.message}`);
  const id = randomUUID();
  const action = await service.from('farm_pending_actions').insert({
    id,
    owner_user_id: userId,
    tool: 'farm_run_shell',
    would_run: wouldRun,
    arguments_sha256: `\\x${'00'.repeat(32)}`,
    client_id: 'approvals-test',
    client_name: 'Approvals test',
    token_jti: jti,
    expires_at: new Date(Date.now() + 600_000).toISOString(),
  });
  if (action.error) throw new Error(`farm_pending_actions insert failed: ${action.error.message}`);
  return id;
}

/** Joins `topic` privately; resolves with the join's outcome and the broadcasts received. */
async function joinPrivately(client: SupabaseClient, topic: string) {
  await client.realtime.setAuth();
  const received: { event: string; payload: { record?: { id?: string } | null } }[] = [];
  const channel = client
    .channel(topic, { config: { private: true } })
    .on('broadcast', { event: '*' }, (message) => {
      received.push(message as unknown as (typeof received)[number]);
    });
  const outcome = await new Promise<{ status: string; message?: string }>((resolve) => {
    channel.subscribe((status, error) => {
      if (status === 'SUBSCRIBED') resolve({ status });
      else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') {
        resolve({ status, message: error?.message });
      }
    });
  });
  return { outcome, received, leave: () => client.removeChannel(channel) };
}

describe('the Approvals page', () => {
  it('shows what an agent asked live, and runs it once the person approves', async () => {
    const { page, cspViolations } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'admin', '/approvals');
    await page.getByTestId('no-pending-actions').waitFor();
    const agent = await agentClient();
    try {
      // A second line after a harmless first one: shown escaped, exactly as it would run.
      const command = 'echo hello-from-the-agent\necho second-line';
      const asked = await ask(agent, command);
      expect(asked.would_run).toContain('echo hello-from-the-agent\\necho second-line');
      const item = page.locator(
        `[data-testid="pending-action"][data-id="${asked.pending_action_id}"]`,
      );
      // Realtime: the page was open before the request existed and was not reloaded.
      await item.waitFor();
      expect(await item.getByTestId('would-run').textContent()).toBe(asked.would_run);
      expect(await item.getByTestId('client-name').textContent()).toBe('Test client');

      // The agent's own retry runs nothing while the person has not decided.
      const early = await agent.callTool('farm_run_shell', {
        command,
        pending_action_id: asked.pending_action_id,
      });
      expect(early.structuredContent).toMatchObject({ status: 'approval_pending' });

      await item.getByRole('button', { name: 'Approve' }).click();
      await item.waitFor({ state: 'detached' });
      const row = page.locator(
        `[data-testid="recent-actions"] tr[data-id="${asked.pending_action_id}"]`,
      );
      await expect.poll(() => row.getAttribute('data-outcome')).toBe('Approved, not run yet');

      const ran = await agent.callTool('farm_run_shell', {
        command,
        pending_action_id: asked.pending_action_id,
      });
      expect(ran.isError).toBeFalsy();
      expect(ran.structuredContent).toMatchObject({
        stdout: 'hello-from-the-agent\nsecond-line\n',
      });
      await expect.poll(() => row.getAttribute('data-outcome')).toBe('Approved, ran');
    } finally {
      await agent.close();
    }
    expect(errors).toEqual([]);
    expect(cspViolations).toEqual([]);
  });

  it('refuses the run once the person denies it', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'admin', '/approvals');
    await page.getByTestId('recent-actions').waitFor();
    const agent = await agentClient();
    try {
      const command = 'touch /scratch/denied';
      const asked = await ask(agent, command);
      const item = page.locator(
        `[data-testid="pending-action"][data-id="${asked.pending_action_id}"]`,
      );
      await item.getByRole('button', { name: 'Deny' }).click();
      await item.waitFor({ state: 'detached' });
      const row = page.locator(
        `[data-testid="recent-actions"] tr[data-id="${asked.pending_action_id}"]`,
      );
      await expect.poll(() => row.getAttribute('data-outcome')).toBe('Denied');
      const refused = await agent.callTool('farm_run_shell', {
        command,
        pending_action_id: asked.pending_action_id,
      });
      expect(refused.isError).toBe(true);
      expect(JSON.parse(String(refused.content[0]?.text))).toMatchObject({
        error: 'confirmation_refused',
        message: 'A person denied this call; nothing ran.',
      });
    } finally {
      await agent.close();
    }
  });

  it('is no page for a role without the farm', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/approvals');
    await page.getByTestId('page-unavailable').waitFor();
    expect(await page.getByTestId('nav-approvals').count()).toBe(0);
  });

  it("never shows another user's pending action, live or read", async () => {
    const admin = await signedInClient(DEMO.admin);
    const other = await signedInClient(DEMO.user);
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'admin', '/approvals');
    await page.getByTestId('recent-actions').waitFor();
    const othersId = await insertPendingAction(other.userId, 'echo not-the-admins');
    // The admin's own, written after the other's: once it is shown, the other's broadcast (on
    // another topic, earlier in commit order) has been delivered wherever it was going to be.
    const ownId = await insertPendingAction(admin.userId, 'echo the-admins-own');
    await page.locator(`[data-testid="pending-action"][data-id="${ownId}"]`).waitFor();
    expect(await page.locator(`[data-id="${othersId}"]`).count()).toBe(0);
    await page.reload();
    await page.locator(`[data-testid="pending-action"][data-id="${ownId}"]`).waitFor();
    expect(await page.locator(`[data-id="${othersId}"]`).count()).toBe(0);
  });

  it("refuses a private join of another user's approvals topic, and admits the owner's", async () => {
    const admin = await signedInClient(DEMO.admin);
    const other = await signedInClient(DEMO.user);
    const refused = await joinPrivately(admin.client, `approvals:${other.userId}`);
    try {
      expect(refused.outcome).toEqual({
        status: 'CHANNEL_ERROR',
        message: `Unauthorized: You do not have permissions to read from this Channel topic: approvals:${other.userId}`,
      });
    } finally {
      await refused.leave();
    }
    // The same client on its own topic: admitted, and the database's broadcast arrives.
    const own = await joinPrivately(admin.client, `approvals:${admin.userId}`);
    try {
      expect(own.outcome).toEqual({ status: 'SUBSCRIBED' });
      const id = await insertPendingAction(admin.userId, 'echo on-the-admins-topic');
      await expect
        .poll(() => own.received.find((message) => message.payload.record?.id === id)?.event)
        .toBe('INSERT');
    } finally {
      await own.leave();
      await admin.client.realtime.disconnect();
      await other.client.realtime.disconnect();
    }
  });
});
