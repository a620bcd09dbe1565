// How a farm tool call proceeds on the MCP side (docs/farm.md "Gating", "The audit"): the
// capability check on the role as it is now, argument validation and the tool's own refusals,
// each audited through the farm's FarmCall; then the farm's gate of destructive calls (a person
// approves, never the agent) and the farm's recorded run. The tool server shapes what the client
// sees; what is recorded, and what may run, the farm decides.
import type { Farm } from '@capture/farm';
import type { Logger } from 'pino';
import { type CallerProfile, readProfile } from '../mcp/caller-profile.ts';
import type { ToolCall, ToolDefinition } from '../mcp/tool-definition.ts';
import { ToolError, toolErrorResult } from '../mcp/tool-error.ts';
import { parseArguments, resultOf, runTool } from '../mcp/tool-run.ts';
import { isStoreOutage } from '../store/database.ts';
import {
  type ElicitationRound,
  elicitationOf,
  resultOfVerdict,
  withPendingAction,
} from './approval-results.ts';

export interface FarmAccess {
  /** Whether a caller with these capabilities may call the tool. */
  permits(caller: CallerProfile): boolean;
  permissionDenied: ToolError;
}

type FarmToolCall = ToolCall & { farm: Farm };

export async function callFarmTool(
  tool: ToolDefinition,
  rawArguments: unknown,
  call: FarmToolCall,
  logger: Logger,
  access: FarmAccess,
  elicitation: ElicitationRound = { supported: false },
) {
  const farmCall = await call.farm.openCall({
    caller: call.caller,
    tool: tool.name,
    rawArguments,
    auditDigest: tool.auditDigest,
  });
  try {
    // The profile the request came with is cached per token for up to 30 s (caller-profile.ts);
    // a farm call runs code on our machines, so it is judged by the role as it is now: a
    // capability taken away (farm:edit, farm_scripts:edit) stops the very next call.
    const caller = await call.asCaller((client) => readProfile(client, call.caller.claims));
    const current: FarmToolCall = { ...call, caller };
    if (!access.permits(caller)) {
      await farmCall.refuse('permission_denied');
      return toolErrorResult(access.permissionDenied);
    }
    const gated = tool.confirm !== undefined;
    const parsed = parseArguments(gated ? withPendingAction(tool.input) : tool.input, rawArguments);
    if (!parsed.ok) {
      await farmCall.refuse('invalid_arguments', parsed.error.message);
      return toolErrorResult(parsed.error);
    }
    const { pending_action_id, ...args } = parsed.args;
    const refusal = tool.refuse?.(current, args as never) ?? null;
    if (refusal) {
      await farmCall.refuse(refusal.code, refusal.message);
      return toolErrorResult(refusal);
    }
    const wouldRun = tool.confirm?.(args as never, current) ?? null;
    let approved: FarmToolCall = current;
    if (wouldRun !== null) {
      const verdict = await farmCall.gate({
        caller,
        args,
        wouldRun,
        pendingActionId: typeof pending_action_id === 'string' ? pending_action_id : undefined,
        elicitation: elicitationOf(elicitation),
      });
      if (verdict.kind !== 'run')
        return resultOfVerdict(verdict, tool.name, call.farm.approvalsUrl);
      approved = { ...current, approval: verdict.approval };
    }
    const outcome = await farmCall.run(approved.approval, () =>
      runTool(tool, args, approved, logger),
    );
    return resultOf(tool, outcome);
  } catch (error) {
    if (!isStoreOutage(error)) throw error;
    logger.warn({ err: error, tool: tool.name }, 'farm call refused: store unavailable');
    return toolErrorResult(
      new ToolError('unavailable', 'The farm cannot record this call right now; retry shortly.'),
    );
  }
}
