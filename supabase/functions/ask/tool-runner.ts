// Runs one function call of the model: the tool must be one the caller was offered (a call to
// anything else is refused, whatever the model was told by data it read), its arguments are
// validated, it runs as the caller, and its result goes back to the model redacted (the shared
// module) and fenced as untrusted data. Database refusals become short tool errors the model
// can explain; nothing from them reaches the client except through the filtered answer.
import type { Caller } from '../_shared/caller.ts';
import type { Redactor } from '../_shared/redaction.ts';
import type { CallerClient } from './data-api.ts';
import { DataQueryError } from './data-api.ts';
import type { AskEvent } from './event-stream.ts';
import { logEvent } from './log.ts';
import type { AssistantTool, DataRef } from './tools.ts';
import type { Fence } from './untrusted-data.ts';
import { provenanceOf, type UntrustedSources } from './untrusted-sources.ts';

/** Why a read returned no rows: the footer says which (docs/assistant.md "Tools"). */
export type UnreadReason = 'refused' | 'timed_out' | 'failed';

export interface ToolRunState {
  refs: DataRef[];
  /** Read tools run, and how many of them found nothing (ran, and no row matched). */
  reads: number;
  emptyReads: number;
  /** Reads that could not look at the data at all, by reason. */
  unread: Record<UnreadReason, number>;
}

export function createToolRunState(): ToolRunState {
  return { refs: [], reads: 0, emptyReads: 0, unread: { refused: 0, timed_out: 0, failed: 0 } };
}

export interface ToolRunContext {
  tools: readonly AssistantTool[];
  caller: Caller;
  db: CallerClient;
  fence: Fence;
  redactor: Redactor;
  dashboardUrl: string;
  askUrl: string;
  signal: AbortSignal;
  emit: (event: AskEvent) => void;
  state: ToolRunState;
  /** What others wrote that the turn has read; a read's result is added to it. */
  sources: UntrustedSources;
  /** The sources as they were when the model made this call (a proposal's basis). */
  sourcesAtCall: readonly string[];
}

interface FunctionCall {
  call_id: string;
  name: string;
  arguments: string;
}

function toolError(context: ToolRunContext, name: string, message: string): string {
  return context.fence.wrap(name, JSON.stringify({ error: message }));
}

/**
 * What kind of failure a read met. PT404 is "nothing you can see" (RLS hides a row exactly as if
 * it did not exist), so it counts as an empty read; 42501 means the role may not read it; 57014 is
 * PostgREST's 8 s statement timeout, and a TimeoutError the 10 s cap of data-api.ts (postgrest-js
 * reports a failed fetch as `{code: '', message: '<name>: …'}`).
 */
function failureOf(error: unknown): 'empty' | UnreadReason {
  if (!(error instanceof DataQueryError)) return 'failed';
  if (error.code === 'PT404') return 'empty';
  if (error.code === '42501') return 'refused';
  if (error.code === '57014' || /^(?:TimeoutError|AbortError):/.test(error.message)) {
    return 'timed_out';
  }
  return 'failed';
}

/** What a database refusal tells the model (PostgREST's public message, never internals). */
function describeFailure(error: unknown): string {
  if (error instanceof DataQueryError) {
    if (failureOf(error) === 'timed_out') {
      return 'the query took too long (8 s limit); narrow it (a device, a host, a shorter window)';
    }
    switch (error.code) {
      case 'PT404':
        return `not found: ${error.details ?? error.message}`;
      case '42501':
        return `permission denied: ${error.message}`;
      case '22023':
      case '22004':
      case '22P02':
      case '22007':
        return `invalid arguments: ${error.message}`;
    }
  }
  return 'the tool failed; the data could not be read just now';
}

export async function runToolCall(call: FunctionCall, context: ToolRunContext): Promise<string> {
  // After an abort no tool starts (and so nothing is written).
  if (context.signal.aborted) return '';
  const tool = context.tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    return toolError(context, call.name, `no tool named ${call.name} is available to this user`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(call.arguments || '{}');
  } catch {
    return toolError(context, tool.name, 'arguments are not valid JSON');
  }
  const parsed = tool.args.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) =>
      `${issue.path.join('.') || 'arguments'}: ${issue.message}`
    );
    return toolError(context, tool.name, `invalid arguments: ${issues.join('; ')}`);
  }
  const args = parsed.data as Record<string, unknown>;
  context.emit({ event: 'tool', data: { label: tool.label(args) } });
  const started = Date.now();
  try {
    const result = await tool.run(
      {
        db: context.db,
        caller: context.caller,
        callId: call.call_id,
        dashboardUrl: context.dashboardUrl,
        askUrl: context.askUrl,
        signal: context.signal,
      },
      args,
    );
    if (context.signal.aborted) return '';
    if (!tool.write) {
      context.state.reads += 1;
      if (result.empty) context.state.emptyReads += 1;
      // Rows written by devices, their apps and the servers they talk to.
      context.sources.add(`the results of ${tool.name}`);
    }
    context.state.refs.push(...result.refs);
    if (result.artifact) {
      context.emit({
        event: 'artifact',
        data: provenanceOf(result.artifact, context.sourcesAtCall),
      });
    }
    logEvent('tool_ran', { tool: tool.name, ms: Date.now() - started, empty: result.empty });
    const redacted = await context.redactor.redactCapture(result.output);
    return context.fence.wrap(tool.name, JSON.stringify(redacted));
  } catch (error) {
    if (context.signal.aborted) throw error;
    const code = error instanceof DataQueryError ? error.code : undefined;
    logEvent('tool_failed', { tool: tool.name, code, ms: Date.now() - started });
    if (!tool.write) {
      context.state.reads += 1;
      const failure = failureOf(error);
      if (failure === 'empty') context.state.emptyReads += 1;
      else context.state.unread[failure] += 1;
    }
    return toolError(context, tool.name, describeFailure(error));
  }
}
