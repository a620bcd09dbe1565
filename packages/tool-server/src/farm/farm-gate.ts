// How a farm tool call proceeds (issue 16 "Gating", docs/farm.md): the capability check, argument
// validation, the confirmation of destructive calls and the audit of every step. A destructive
// call (the tool's confirm() answers what would run) first runs nothing: it answers a
// confirmation bound to this user, this tool and these exact arguments; only a second call that
// carries it runs, once. Every outcome (asked, refused, ran, failed) is written to
// public.farm_audit, and a run is recorded before it starts: no record, no run.
import { acceptedContent, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type CallerProfile, readProfile } from '../mcp/caller-profile.ts';
import type { ToolCall, ToolDefinition } from '../mcp/tool-definition.ts';
import { ToolError, toolErrorResult } from '../mcp/tool-error.ts';
import { parseArguments, resultOf, runTool } from '../mcp/tool-run.ts';
import { isStoreOutage } from '../store/database.ts';
import { type AuditEvent, argumentsForLog, boundedForLog, outcomeSummary } from './audit.ts';
import { REFUSAL_MESSAGES } from './confirmations.ts';
import type { Farm } from './farm.ts';

/** The first answer of a destructive call. */
export const ConfirmationRequiredSchema = z.object({
  status: z.literal('confirmation_required'),
  confirmation: z.string().describe('Pass this back, with the same arguments, to run the call.'),
  expires_at: z.string(),
  would_run: z.string().describe('What the confirmed call will do.'),
});

/** A gated tool's input: its own arguments plus the confirmation of a second call. */
export function withConfirmation(input: z.ZodObject): z.ZodObject {
  return input.extend({
    confirmation: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe(
        'The confirmation a first call of these exact arguments returned. Without it, a ' +
          'destructive call runs nothing and answers what it would do.',
      ),
  });
}

export interface FarmAccess {
  /** Whether a caller with these capabilities may call the tool. */
  permits(caller: CallerProfile): boolean;
  permissionDenied: ToolError;
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

type FarmToolCall = ToolCall & { farm: Farm };

export async function callFarmTool(
  tool: ToolDefinition,
  rawArguments: unknown,
  call: FarmToolCall,
  logger: Logger,
  access: FarmAccess,
  elicitation: ElicitationRound = { supported: false },
) {
  const { audit, confirmations } = call.farm;
  const userId = call.caller.userId;
  // The confirmation is a bearer value of its user until spent (and a refused one is not): the
  // audit keeps its digest; confirmation_id already ties the asked and the ran rows.
  const logged = await call.redact(
    boundedForLog(
      argumentsForLog(rawArguments ?? {}, [...(tool.auditDigest ?? []), 'confirmation']),
    ),
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
    const parsed = parseArguments(gated ? withConfirmation(tool.input) : tool.input, rawArguments);
    if (!parsed.ok) {
      await record('refused', { reason: 'invalid_arguments', message: parsed.error.message });
      return toolErrorResult(parsed.error);
    }
    const { confirmation, ...args } = parsed.args;
    const refusal = tool.refuse?.(current, args as never) ?? null;
    if (refusal) {
      await record('refused', { reason: refusal.code, message: refusal.message });
      return toolErrorResult(refusal);
    }
    const wouldRun = tool.confirm?.(args as never, current) ?? null;
    // what would run repeats the arguments (a command, a script), so the audit keeps it as it
    // keeps them: redacted, and by digest when long; the caller is shown it whole.
    const loggedWouldRun = wouldRun === null ? null : await call.redact(argumentsForLog(wouldRun));
    let confirmationId: string | undefined;
    // Where the client can ask its user, the person confirms directly (issue 16): the
    // confirmation token then travels as the round's request state, which the client echoes
    // untouched. It is checked like any confirmation (user, tool, arguments, once, expiry),
    // because request state comes back from the client and is not to be trusted as such.
    const answer = elicitation.responses?.[ELICITATION_KEY];
    if (wouldRun !== null && typeof confirmation !== 'string' && elicitation.supported) {
      if (answer === undefined || !elicitation.requestState) {
        const issued = await confirmations.issue(userId, tool.name, args, wouldRun);
        await record(
          'asked',
          { would_run: loggedWouldRun, expires_at: issued.expiresAt, via: 'elicitation' },
          issued.id,
        );
        return inputRequired({
          inputRequests: {
            [ELICITATION_KEY]: inputRequired.elicit({
              message: `${wouldRun} Confirm to run it.`,
              requestedSchema: ConfirmAnswer,
            }),
          },
          requestState: issued.token,
        });
      }
      const view = inputResponse(elicitation.responses, ELICITATION_KEY);
      const accepted = acceptedContent(elicitation.responses, ELICITATION_KEY, ConfirmAnswer);
      if (view.kind !== 'elicit' || view.action !== 'accept' || accepted?.confirm !== true) {
        await record('refused', { reason: 'declined', via: 'elicitation' });
        return toolErrorResult(
          new ToolError('confirmation_refused', 'The user did not confirm this call; nothing ran.'),
        );
      }
      const redemption = await confirmations.redeem(
        elicitation.requestState,
        userId,
        tool.name,
        args,
      );
      if (!redemption.ok) {
        await record('refused', { reason: `confirmation_${redemption.refusal}` });
        return toolErrorResult(
          new ToolError('confirmation_refused', REFUSAL_MESSAGES[redemption.refusal]),
        );
      }
      confirmationId = redemption.id;
    } else if (wouldRun !== null) {
      if (typeof confirmation !== 'string') {
        const issued = await confirmations.issue(userId, tool.name, args, wouldRun);
        await record(
          'asked',
          { would_run: loggedWouldRun, expires_at: issued.expiresAt },
          issued.id,
        );
        const output = {
          status: 'confirmation_required' as const,
          confirmation: issued.token,
          expires_at: issued.expiresAt,
          would_run: wouldRun,
        };
        return {
          content: [{ type: 'text' as const, text: JSON.stringify(output) }],
          structuredContent: output,
        };
      }
      const redemption = await confirmations.redeem(confirmation, userId, tool.name, args);
      if (!redemption.ok) {
        await record('refused', { reason: `confirmation_${redemption.refusal}` });
        return toolErrorResult(
          new ToolError('confirmation_refused', REFUSAL_MESSAGES[redemption.refusal]),
        );
      }
      confirmationId = redemption.id;
    }
    const started = performance.now();
    const auditId = await record('ran', { status: 'running' }, confirmationId);
    const outcome = await runTool(tool, args, current, logger);
    // Only the allow-listed outcome fields, never a command's output or a page's text (audit.ts).
    const summary = outcome.ok
      ? { ...((await call.redact(outcomeSummary(outcome.output))) as object), status: 'ok' }
      : { status: 'error', error: outcome.error.code, message: outcome.error.message };
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
