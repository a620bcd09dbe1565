// One farm tool call as the farm records it (docs/farm.md "The audit", "Gating"): its arguments as
// the audit keeps them (redacted, digested when long or named), every refusal, the gate of a
// destructive call, and the run, recorded before it starts and completed after. Every outcome
// (asked, refused, ran, failed) is a row of public.farm_audit: no record, no run.
import type { Logger } from 'pino';
import type { FarmCaller } from './acting-caller.ts';
import {
  type Approval,
  type Elicitation,
  type GateVerdict,
  gateDestructiveCall,
} from './approval-gate.ts';
import {
  type AuditEvent,
  argumentsForLog,
  boundedForLog,
  type FarmAudit,
  outcomeSummary,
} from './audit.ts';
import type { FarmPendingActions } from './pending-actions.ts';

export interface FarmCallRequest {
  /** Who the call's verified token says is calling: the audit's user, token and client. */
  caller: FarmCaller;
  tool: string;
  /** The arguments as sent, unknown members included: the audit keeps them as sent, redacted. */
  rawArguments: unknown;
  /** Argument names the audit keeps only as length and SHA-256 (text typed into a page). */
  auditDigest?: readonly string[];
}

export interface GateRequest {
  /** The caller as whoami() answers now: the owner a pending action binds. */
  caller: FarmCaller;
  /** The validated arguments (without pending_action_id): what an approval binds, by hash. */
  args: Record<string, unknown>;
  /** What would run, as a person is shown it. */
  wouldRun: string;
  pendingActionId: string | undefined;
  elicitation: Elicitation;
}

/** What a run came to: its output, or the failure the caller was told. */
export type RunOutcome<Output = unknown> =
  | { ok: true; output: Output }
  | { ok: false; error: { code: string; message: string } };

/** Redacts secrets the shared redaction module recognises (the tool server's redactor). */
export type Redact = (value: unknown) => Promise<unknown>;

export interface FarmCallParts {
  audit: FarmAudit;
  pendingActions: FarmPendingActions;
  redact: Redact;
  logger: Logger;
}

export class FarmCall {
  private readonly parts: FarmCallParts;
  private readonly request: FarmCallRequest;
  private readonly logged: unknown;

  private constructor(parts: FarmCallParts, request: FarmCallRequest, logged: unknown) {
    this.parts = parts;
    this.request = request;
    this.logged = logged;
  }

  static async open(parts: FarmCallParts, request: FarmCallRequest): Promise<FarmCall> {
    // A pending action's id is no bearer value (it runs only for the grant that asked, once a
    // person approved it), so it is logged as sent; confirmation_id ties the asked and ran rows.
    const logged = await parts.redact(
      boundedForLog(argumentsForLog(request.rawArguments ?? {}, request.auditDigest ?? [])),
    );
    return new FarmCall(parts, request, logged);
  }

  private record(event: AuditEvent, outcome: Record<string, unknown>, confirmationId?: string) {
    return this.parts.audit.record({
      caller: this.request.caller,
      tool: this.request.tool,
      event,
      arguments: this.logged,
      outcome,
      confirmationId,
    });
  }

  /** Records a refusal before anything ran: the capability, the arguments, a rule of the tool. */
  async refuse(reason: string, message?: string): Promise<void> {
    await this.record('refused', message === undefined ? { reason } : { reason, message });
  }

  /**
   * The gate of a destructive call (approval-gate.ts): runs only with the approval it answers,
   * which only a person's decision of exactly this call produces.
   */
  async gate(request: GateRequest): Promise<GateVerdict> {
    return gateDestructiveCall({
      tool: this.request.tool,
      args: request.args,
      wouldRun: request.wouldRun,
      // what would run repeats the arguments (a command, a script), so the audit keeps it as it
      // keeps them: redacted, and by digest when long; the caller is shown it whole.
      loggedWouldRun: await this.parts.redact(argumentsForLog(request.wouldRun)),
      pendingActionId: request.pendingActionId,
      caller: request.caller,
      elicitation: request.elicitation,
      pendingActions: this.parts.pendingActions,
      record: (event, outcome, id) => this.record(event, outcome, id),
    });
  }

  /**
   * Runs `work` once its record is written (a store that cannot take the row stops it before it
   * starts), then completes the record: only the allow-listed outcome fields, never a command's
   * output or a page's text (audit.ts), and who approved it.
   */
  async run<Outcome extends RunOutcome>(
    approval: Approval | undefined,
    work: () => Promise<Outcome>,
  ): Promise<Outcome> {
    const started = performance.now();
    // Who let it run: the person's decision (dashboard or elicitation) and when.
    const approved = approval && { via: approval.via, at: approval.at };
    const auditId = await this.record(
      'ran',
      { status: 'running', ...(approved && { approved }) },
      approval?.pendingActionId,
    );
    const outcome = await work();
    const summary = {
      ...(outcome.ok
        ? { ...((await this.parts.redact(outcomeSummary(outcome.output))) as object), status: 'ok' }
        : { status: 'error', error: outcome.error.code, message: outcome.error.message }),
      ...(approved && { approved }),
    };
    await this.parts.audit
      .complete(auditId, outcome.ok ? 'ran' : 'failed', summary, performance.now() - started)
      .catch((error: unknown) =>
        this.parts.logger.error(
          { err: error, tool: this.request.tool, auditId },
          'farm audit not completed',
        ),
      );
    return outcome;
  }
}
