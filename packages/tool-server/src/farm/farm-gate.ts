// How a farm tool call proceeds (docs/farm.md "Gating", "The audit"): the capability check,
// argument validation, the gate of destructive calls (approval-gate.ts: a person approves, never
// the agent) and the audit of every step. Every outcome (asked, refused, ran, failed) is written
// to public.farm_audit, and a run is recorded before it starts: no record, no run.
import type { Logger } from 'pino';
import { type CallerProfile, readProfile } from '../mcp/caller-profile.ts';
import type { ToolCall, ToolDefinition } from '../mcp/tool-definition.ts';
import { ToolError, toolErrorResult } from '../mcp/tool-error.ts';
import { parseArguments, resultOf, runTool } from '../mcp/tool-run.ts';
import { isStoreOutage } from '../store/database.ts';
import {
  type Approval,
  type ElicitationRound,
  gateDestructiveCall,
  withPendingAction,
} from './approval-gate.ts';
import { type AuditEvent, argumentsForLog, boundedForLog, outcomeSummary } from './audit.ts';
import type { Farm } from './farm.ts';

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
  const { audit } = call.farm;
  // A pending action's id is no bearer value (it runs only for the grant that asked, once a
  // person approved it), so it is logged as sent; confirmation_id ties the asked and ran rows.
  const logged = await call.redact(
    boundedForLog(argumentsForLog(rawArguments ?? {}, tool.auditDigest ?? [])),
  );
  const record = (event: AuditEvent, outcome: Record<string, unknown>, confirmationId?: string) =>
    audit.record({
      caller: call.caller,
      tool: tool.name,
      event,
      arguments: logged,
      outcome,
      confirmationId,
    });
  try {
    // The profile the request came with is cached per token for up to 30 s (caller-profile.ts);
    // a farm call runs code on our machines, so it is judged by the role as it is now: a
    // capability taken away (farm:edit, farm_scripts:edit) stops the very next call.
    const caller = await call.asCaller((client) => readProfile(client, call.caller.claims));
    const current: FarmToolCall = { ...call, caller };
    if (!access.permits(caller)) {
      await record('refused', { reason: 'permission_denied' });
      return toolErrorResult(access.permissionDenied);
    }
    const gated = tool.confirm !== undefined;
    const parsed = parseArguments(gated ? withPendingAction(tool.input) : tool.input, rawArguments);
    if (!parsed.ok) {
      await record('refused', { reason: 'invalid_arguments', message: parsed.error.message });
      return toolErrorResult(parsed.error);
    }
    const { pending_action_id, ...args } = parsed.args;
    const refusal = tool.refuse?.(current, args as never) ?? null;
    if (refusal) {
      await record('refused', { reason: refusal.code, message: refusal.message });
      return toolErrorResult(refusal);
    }
    const wouldRun = tool.confirm?.(args as never, current) ?? null;
    let approval: Approval | undefined;
    if (wouldRun !== null) {
      const gate = await gateDestructiveCall({
        tool,
        args,
        wouldRun,
        // what would run repeats the arguments (a command, a script), so the audit keeps it as
        // it keeps them: redacted, and by digest when long; the caller is shown it whole.
        loggedWouldRun: await call.redact(argumentsForLog(wouldRun)),
        pendingActionId: typeof pending_action_id === 'string' ? pending_action_id : undefined,
        caller,
        farm: call.farm,
        elicitation,
        record,
      });
      if (!gate.run) return gate.result;
      approval = gate.approval;
    }
    const started = performance.now();
    // Who let it run: the person's decision (dashboard or elicitation) and when.
    const approved = approval && { via: approval.via, at: approval.at };
    const auditId = await record(
      'ran',
      { status: 'running', ...(approved && { approved }) },
      approval?.pendingActionId,
    );
    const outcome = await runTool(tool, args, current, logger);
    // Only the allow-listed outcome fields, never a command's output or a page's text (audit.ts).
    const summary = {
      ...(outcome.ok
        ? { ...((await call.redact(outcomeSummary(outcome.output))) as object), status: 'ok' }
        : { status: 'error', error: outcome.error.code, message: outcome.error.message }),
      ...(approved && { approved }),
    };
    await audit
      .complete(auditId, outcome.ok ? 'ran' : 'failed', summary, performance.now() - started)
      .catch((error: unknown) =>
        logger.error({ err: error, tool: tool.name, auditId }, 'farm audit not completed'),
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
