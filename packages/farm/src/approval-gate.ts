// The gate of a destructive farm call (001 §4.1 "every destructive tool is confirm-gated";
// docs/farm.md "Gating"): a person approves it, never the agent that asked. The first call runs
// nothing and answers a pending action for a person to approve in the dashboard, or, where the
// client declared elicitation, asks the person there; a later call with the action's id runs
// only once a person approved exactly that call, for the same OAuth grant, once, before expiry.
// The verdicts are the farm's; how a client is shown them (MCP results, the elicitation form) is
// the tool server's.
import { z } from 'zod';
import type { FarmCaller } from './acting-caller.ts';
import type { AuditEvent } from './audit.ts';
import { FarmError } from './farm-error.ts';
import {
  type FarmPendingActions,
  type PendingAction,
  REFUSAL_MESSAGES,
} from './pending-actions.ts';

/**
 * The person's side of an MCP elicitation for this request: whether the client can ask its user
 * and, on a retried request, what came back: the round's request state (the pending action's id
 * as we sent it, echoed by the client and so not to be trusted as such) and whether the person
 * explicitly accepted and confirmed.
 */
export type Elicitation =
  | { supported: false }
  | { supported: true; answer?: { requestState: string; approved: boolean } };

/**
 * A person's approval of one call, minted only by the gate (approvals are tracked here, so one
 * built elsewhere is no approval): what a destructive operation of the farm demands before it
 * runs anything.
 */
export interface Approval {
  readonly pendingActionId: string;
  /** `dashboard` or `elicitation`. */
  readonly via: string;
  readonly at: string;
}

const minted = new WeakSet<Approval>();

function mintApproval(pendingActionId: string, via: string, at: string): Approval {
  const approval = Object.freeze({ pendingActionId, via, at });
  minted.add(approval);
  return approval;
}

/** Throws unless `approval` is one the gate minted: nothing destructive runs without a person. */
export function requireApproval(approval: Approval | undefined, what: string): void {
  if (approval === undefined || !minted.has(approval)) {
    throw new FarmError(
      'confirmation_required',
      `${what} runs only once a person approved it; nothing ran.`,
    );
  }
}

/** The gate's verdict: run (a person approved), or what to answer while nothing runs. */
export type GateVerdict =
  | { kind: 'run'; approval: Approval }
  /** Asked just now (`approval_required`) or not decided yet (`approval_pending`). */
  | { kind: 'approval_required' | 'approval_pending'; action: PendingAction }
  /** Ask the person in the client: this question, with the action's id as the request state. */
  | { kind: 'elicit'; action: PendingAction; question: string }
  | { kind: 'refused'; message: string };

export interface GatedCall {
  tool: string;
  args: Record<string, unknown>;
  wouldRun: string;
  /** The audit's would_run (redacted, digested when long, as the arguments are). */
  loggedWouldRun: unknown;
  pendingActionId: string | undefined;
  /** The caller as whoami() answers now: the pending action's owner. */
  caller: FarmCaller;
  elicitation: Elicitation;
  pendingActions: FarmPendingActions;
  record(event: AuditEvent, outcome: Record<string, unknown>, pendingActionId?: string): unknown;
}

/** Asks the person through the client (MCP elicitation), then judges their answer. */
async function gateByElicitation(
  call: GatedCall,
  answer: { requestState: string; approved: boolean } | undefined,
): Promise<GateVerdict> {
  const { pendingActions, caller, tool, args } = call;
  if (answer === undefined) {
    const action = await pendingActions.ask(caller, tool, args, call.wouldRun);
    await call.record(
      'asked',
      { would_run: call.loggedWouldRun, expires_at: action.expiresAt, via: 'elicitation' },
      action.id,
    );
    // The action's id travels as the round's request state, which the client echoes; it is
    // judged like any pending action (user, grant, tool, arguments, once, expiry), because
    // request state comes back from the client and is not to be trusted as such.
    return { kind: 'elicit', action, question: `${call.wouldRun} Confirm to run it.` };
  }
  const id = answer.requestState;
  // Request state is the client's to send back: anything but an id we could have issued is as
  // good as unknown (and never reaches a query typed uuid).
  if (!z.uuid().safeParse(id).success) {
    await call.record('refused', { reason: 'confirmation_unknown', via: 'elicitation' });
    return { kind: 'refused', message: REFUSAL_MESSAGES.unknown };
  }
  await pendingActions.decideByElicitation(
    id,
    caller,
    { tool, args },
    answer.approved ? 'approved' : 'denied',
  );
  if (!answer.approved) {
    await call.record('refused', { reason: 'declined', via: 'elicitation' });
    return { kind: 'refused', message: 'The user did not confirm this call; nothing ran.' };
  }
  return redeem(call, id, { answered: true });
}

/** A call naming a pending action: runs only what a person approved, once. */
async function redeem(
  call: GatedCall,
  id: string,
  options: { answered: boolean },
): Promise<GateVerdict> {
  const redemption = await call.pendingActions.redeem(id, call.caller, call.tool, call.args);
  if (redemption.kind === 'run') {
    return {
      kind: 'run',
      approval: mintApproval(redemption.id, redemption.decidedVia, redemption.decidedAt),
    };
  }
  if (redemption.kind === 'pending' && !options.answered) {
    await call.record('refused', { reason: 'confirmation_pending' }, redemption.action.id);
    return { kind: 'approval_pending', action: redemption.action };
  }
  // After an elicitation answer nothing is left pending unless the answer named an action it
  // could not decide (another grant's, other arguments): as good as unknown.
  const refusal = redemption.kind === 'refused' ? redemption.refusal : 'unknown';
  await call.record('refused', { reason: `confirmation_${refusal}` });
  return { kind: 'refused', message: REFUSAL_MESSAGES[refusal] };
}

export async function gateDestructiveCall(call: GatedCall): Promise<GateVerdict> {
  if (call.pendingActionId !== undefined) {
    return redeem(call, call.pendingActionId, { answered: false });
  }
  if (call.elicitation.supported) return gateByElicitation(call, call.elicitation.answer);
  const action = await call.pendingActions.ask(call.caller, call.tool, call.args, call.wouldRun);
  await call.record(
    'asked',
    { would_run: call.loggedWouldRun, expires_at: action.expiresAt, via: 'dashboard' },
    action.id,
  );
  return { kind: 'approval_required', action };
}
