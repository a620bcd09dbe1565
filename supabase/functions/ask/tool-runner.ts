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

export interface ToolRunState {
  refs: DataRef[];
  /** Read tools run, and how many of them found nothing. */
  reads: number;
  emptyReads: number;
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
}

interface FunctionCall {
  call_id: string;
  name: string;
  arguments: string;
}

function toolError(context: ToolRunContext, name: string, message: string): string {
  return context.fence.wrap(name, JSON.stringify({ error: message }));
}

/** What a database refusal tells the model (PostgREST's public message, never internals). */
function describeFailure(error: unknown): string {
  if (error instanceof DataQueryError) {
    switch (error.code) {
      case 'PT404':
        return `not found: ${error.details ?? error.message}`;
      case '42501':
        return `permission denied: ${error.message}`;
      case '57014':
        return 'the query took longer than 8 s; narrow it (a device, a host, a shorter window)';
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
    }
    context.state.refs.push(...result.refs);
    if (result.artifact) context.emit({ event: 'artifact', data: result.artifact });
    logEvent('tool_ran', { tool: tool.name, ms: Date.now() - started, empty: result.empty });
    const redacted = await context.redactor.redactCapture(result.output);
    return context.fence.wrap(tool.name, JSON.stringify(redacted));
  } catch (error) {
    if (context.signal.aborted) throw error;
    const code = error instanceof DataQueryError ? error.code : undefined;
    logEvent('tool_failed', { tool: tool.name, code, ms: Date.now() - started });
    if (!tool.write) {
      context.state.reads += 1;
      if (code === 'PT404') context.state.emptyReads += 1;
    }
    return toolError(context, tool.name, describeFailure(error));
  }
}
