// The two sides of a farm call that waits for a person (docs/farm.md "Gating"): the agent's first
// call, which answers a pending action and runs nothing, and the person who, signed in to the
// dashboard (a session of the stack's auth service), approves or denies it over REST as the
// Approvals page does.
import type { RunningStack } from '@capture/stack';
import { expect } from 'vitest';
import type { ConnectedClient, ToolResult } from './mcp-clients.ts';
import { DEMO, signIn } from './oauth-stack.ts';

type Login = { email: string; password: string };

export interface PendingActionAnswer {
  status: 'approval_required' | 'approval_pending';
  pending_action_id: string;
  would_run: string;
  expires_at: string;
  approve_at: string;
  message: string;
}

const sessions = new Map<string, string>();

/** A dashboard session of `login` on this stack, signed in once and reused. */
export async function sessionOf(stack: RunningStack, login: Login = DEMO.admin): Promise<string> {
  const key = `${stack.apiUrl} ${login.email}`;
  const cached = sessions.get(key);
  if (cached) return cached;
  const token = await signIn(stack, login);
  sessions.set(key, token);
  return token;
}

/** PATCH of a pending action's decision with `token` in both headers (001 §5.3). */
export function patchDecision(
  stack: RunningStack,
  token: string,
  id: string,
  decision: 'approved' | 'denied',
): Promise<Response> {
  return fetch(`${stack.apiUrl}/rest/v1/farm_pending_actions?id=eq.${id}`, {
    method: 'PATCH',
    headers: {
      apikey: token,
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      prefer: 'return=representation',
    },
    body: JSON.stringify({ decision }),
  });
}

/** The person decides from their dashboard session; checks that it took. */
export async function decideAsPerson(
  stack: RunningStack,
  id: string,
  decision: 'approved' | 'denied' = 'approved',
  login: Login = DEMO.admin,
): Promise<void> {
  const response = await patchDecision(stack, await sessionOf(stack, login), id, decision);
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject([{ id, decision, decided_via: 'dashboard' }]);
}

/** The agent's first call: checks that it ran nothing, answers the pending action. */
export async function askFor(
  client: ConnectedClient,
  tool: string,
  args: Record<string, unknown>,
): Promise<PendingActionAnswer> {
  const first = await client.callTool(tool, args);
  expect(first.isError).toBeFalsy();
  const answer = first.structuredContent as unknown as PendingActionAnswer;
  expect(answer).toMatchObject({ status: 'approval_required' });
  return answer;
}

/** Asked by the agent, approved by the person, then called again: what the run answers. */
export async function approvedCall(
  stack: RunningStack,
  client: ConnectedClient,
  tool: string,
  args: Record<string, unknown>,
  login: Login = DEMO.admin,
): Promise<ToolResult> {
  const { pending_action_id } = await askFor(client, tool, args);
  await decideAsPerson(stack, pending_action_id, 'approved', login);
  return client.callTool(tool, { ...args, pending_action_id });
}
