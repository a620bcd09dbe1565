// The MCP face of the farm's gate (docs/farm.md "Gating"; the gate itself is @capture/farm's): a
// gated tool's extra argument and its answer while nothing may run, the 2026-07-28 elicitation
// round read into the person's answer, and each verdict of the gate as the tool result the
// client sees.
import type { Elicitation, GateVerdict, PendingAction } from '@capture/farm';
import { acceptedContent, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ToolError, toolErrorResult } from '../mcp/tool-error.ts';

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

/**
 * The person's answer in a retried round, as the farm's gate judges it: approved only on an
 * explicit accept that confirms. No answer, or no request state, is a round still to ask.
 */
export function elicitationOf(round: ElicitationRound): Elicitation {
  if (!round.supported) return { supported: false };
  if (round.responses?.[ELICITATION_KEY] === undefined || !round.requestState) {
    return { supported: true };
  }
  const view = inputResponse(round.responses, ELICITATION_KEY);
  const accepted = acceptedContent(round.responses, ELICITATION_KEY, ConfirmAnswer);
  return {
    supported: true,
    answer: {
      requestState: round.requestState,
      approved: view.kind === 'elicit' && view.action === 'accept' && accepted?.confirm === true,
    },
  };
}

function approvalResult(
  status: 'approval_required' | 'approval_pending',
  action: PendingAction,
  tool: string,
  approveAt: string,
) {
  const retry =
    `call ${tool} again with the same arguments plus pending_action_id ` +
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

/** A verdict that runs nothing, as the tool result: a pending action, a question, a refusal. */
export function resultOfVerdict(
  verdict: Exclude<GateVerdict, { kind: 'run' }>,
  tool: string,
  approveAt: string,
) {
  switch (verdict.kind) {
    case 'approval_required':
    case 'approval_pending':
      return approvalResult(verdict.kind, verdict.action, tool, approveAt);
    case 'elicit':
      return inputRequired({
        inputRequests: {
          [ELICITATION_KEY]: inputRequired.elicit({
            message: verdict.question,
            requestedSchema: ConfirmAnswer,
          }),
        },
        requestState: verdict.action.id,
      });
    case 'refused':
      return toolErrorResult(new ToolError('confirmation_refused', verdict.message));
  }
}
