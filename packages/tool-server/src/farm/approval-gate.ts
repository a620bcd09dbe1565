// The gate of a destructive farm call (001 §4.1 "every destructive tool is confirm-gated";
// docs/farm.md "Gating"): a person approves it, never the agent that asked. The first call runs
// nothing and answers a pending action for a person to approve in the dashboard, or, where the
// client declared elicitation, asks the person there; a later call with the action's id runs
// only once a person approved exactly that call, for the same OAuth grant, once, before expiry.
import { acceptedContent, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { CallerProfile } from '../mcp/caller-profile.ts';
import type { ToolDefinition } from '../mcp/tool-definition.ts';
import { ToolError, toolErrorResult } from '../mcp/tool-error.ts';
import type { AuditEvent } from './audit.ts';
import type { Farm } from './farm.ts';
import { type PendingAction, REFUSAL_MESSAGES } from './pending-actions.ts';

/** A destructive call's answer while nothing may run: what awaits a person, and where. */
export const ApprovalRequiredSchema = z.object({
  status: z
    .enum(['approval_required', 'approval_pending'])
    .describe('approval_required: asked just now; approval_pending: not decided yet.'),
  pending_action_id: z
    .string()
    .describe('Call again with the same arguments plus this id once a person approved it.'),
  would_run: z.string().describe('What the approved call will do, as the person is shown it.'),
  expires_at: z.string(),
  approve_at: z.string().describe('The dashboard page where a person approves or denies it.'),
  message: z.string(),
});

/** A gated tool's input: its own arguments plus the pending action a person approved. */
export function withPendingAction(input: z.ZodObject): z.ZodObject {
  return input.extend({
    pending_action_id: z
      .uuid()
      .optional()
      .describe(
        'The pending action a first call of these exact arguments answered. It runs only once ' +
          'a person approved it in the dashboard; an agent cannot approve it.',
      ),
  });
}

/**
 * MCP elicitation for this request (2026-07-28 multi-round-trip): whether the client can ask
 * its user, and what a retried request carries back (the user's answer and our request state).
 */
export interface ElicitationRound {
  supported: boolean;
  responses?: Record<string, unknown>;
  requestState?: string;
}

const ELICITATION_KEY = 'confirm';
const ConfirmAnswer = z.object({
  confirm: z.boolean().describe('Run it'),
});

export interface Approval {
  pendingActionId: string;
  via: string;
  at: string;
}

/** The gate's verdict: run (a person approved) or answer with this result and run nothing. */
export type GateOutcome =
  | { run: true; approval: Approval }
  | {
      run: false;
      result:
        | ReturnType<typeof toolErrorResult>
        | ReturnType<typeof inputRequired>
        | ReturnType<typeof approvalResult>;
    };

export interface GatedCall {
  tool: ToolDefinition;
  args: Record<string, unknown>;
  wouldRun: string;
  /** The audit's would_run (redacted, digested when long, as the arguments are). */
  loggedWouldRun: unknown;
  pendingActionId: string | undefined;
  caller: CallerProfile;
  farm: Farm;
  elicitation: ElicitationRound;
  record(event: AuditEvent, outcome: Record<string, unknown>, pendingActionId?: string): unknown;
}

function refusedResult(message: string) {
  return toolErrorResult(new ToolError('confirmation_refused', message));
}

function approvalResult(
  status: 'approval_required' | 'approval_pending',
  action: PendingAction,
  call: GatedCall,
) {
  const approveAt = call.farm.approvalsUrl;
  const retry =
    `call ${call.tool.name} again with the same arguments plus pending_action_id ` +
    `"${action.id}", before ${action.expiresAt}.`;
  const message =
    status === 'approval_required'
      ? `Nothing ran. A person must approve this call in the dashboard (${approveAt}); an ` +
        `agent cannot approve it. Tell the user it awaits their approval. Once approved, ${retry}`
      : `Not approved yet; nothing ran. A person approves or denies it in the dashboard ` +
        `(${approveAt}). Once approved, ${retry}`;
  const output = {
    status,
    pending_action_id: action.id,
    would_run: action.wouldRun,
    expires_at: action.expiresAt,
    approve_at: approveAt,
    message,
  };
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(output) }],
    structuredContent: output,
  };
}

/** Asks the person through the client (MCP elicitation), then judges their answer. */
async function gateByElicitation(call: GatedCall): Promise<GateOutcome> {
  const { elicitation, farm, caller, tool, args } = call;
  const answer = elicitation.responses?.[ELICITATION_KEY];
  if (answer === undefined || !elicitation.requestState) {
    const action = await farm.pendingActions.ask(caller, tool.name, args, call.wouldRun);
    await call.record(
      'asked',
      { would_run: call.loggedWouldRun, expires_at: action.expiresAt, via: 'elicitation' },
      action.id,
    );
    return {
      run: false,
      // The action's id travels as the round's request state, which the client echoes; it is
      // judged like any pending action (user, grant, tool, arguments, once, expiry), because
      // request state comes back from the client and is not to be trusted as such.
      result: inputRequired({
        inputRequests: {
          [ELICITATION_KEY]: inputRequired.elicit({
            message: `${call.wouldRun} Confirm to run it.`,
            requestedSchema: ConfirmAnswer,
          }),
        },
        requestState: action.id,
      }),
    };
  }
  const id = elicitation.requestState;
  // Request state is the client's to send back: anything but an id we could have issued is as
  // good as unknown (and never reaches a query typed uuid).
  if (!z.uuid().safeParse(id).success) {
    await call.record('refused', { reason: 'confirmation_unknown', via: 'elicitation' });
    return { run: false, result: refusedResult(REFUSAL_MESSAGES.unknown) };
  }
  const view = inputResponse(elicitation.responses, ELICITATION_KEY);
  const accepted = acceptedContent(elicitation.responses, ELICITATION_KEY, ConfirmAnswer);
  const approved = view.kind === 'elicit' && view.action === 'accept' && accepted?.confirm === true;
  await farm.pendingActions.decideByElicitation(
    id,
    caller,
    { tool: tool.name, args },
    approved ? 'approved' : 'denied',
  );
  if (!approved) {
    await call.record('refused', { reason: 'declined', via: 'elicitation' });
    return {
      run: false,
      result: refusedResult('The user did not confirm this call; nothing ran.'),
    };
  }
  return redeem(call, id, { answered: true });
}

/** A call naming a pending action: runs only what a person approved, once. */
async function redeem(
  call: GatedCall,
  id: string,
  options: { answered: boolean },
): Promise<GateOutcome> {
  const redemption = await call.farm.pendingActions.redeem(
    id,
    call.caller,
    call.tool.name,
    call.args,
  );
  if (redemption.kind === 'run') {
    return {
      run: true,
      approval: {
        pendingActionId: redemption.id,
        via: redemption.decidedVia,
        at: redemption.decidedAt,
      },
    };
  }
  if (redemption.kind === 'pending' && !options.answered) {
    await call.record('refused', { reason: 'confirmation_pending' }, redemption.action.id);
    return { run: false, result: approvalResult('approval_pending', redemption.action, call) };
  }
  // After an elicitation answer nothing is left pending unless the answer named an action it
  // could not decide (another grant's, other arguments): as good as unknown.
  const refusal = redemption.kind === 'refused' ? redemption.refusal : 'unknown';
  await call.record('refused', { reason: `confirmation_${refusal}` });
  return { run: false, result: refusedResult(REFUSAL_MESSAGES[refusal]) };
}

export async function gateDestructiveCall(call: GatedCall): Promise<GateOutcome> {
  if (call.pendingActionId !== undefined) {
    return redeem(call, call.pendingActionId, { answered: false });
  }
  if (call.elicitation.supported) return gateByElicitation(call);
  const action = await call.farm.pendingActions.ask(
    call.caller,
    call.tool.name,
    call.args,
    call.wouldRun,
  );
  await call.record(
    'asked',
    { would_run: call.loggedWouldRun, expires_at: action.expiresAt, via: 'dashboard' },
    action.id,
  );
  return { run: false, result: approvalResult('approval_required', action, call) };
}
