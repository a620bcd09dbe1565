// The Approvals page in Chromium against a started stack with a farm (001 §4.1 "confirm-gated";
// docs/farm.md "Gating"): an MCP client with an OAuth token asks to run a command, and the request
// appears on the admin's page over Realtime with exactly what would run and the client's name;
// the client's own retries run nothing; Approve lets that client run it once, Deny refuses it, and
// the page follows each outcome live. A role without the farm gets no page.
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
});
