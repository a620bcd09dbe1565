// Running one tool call once the caller may make it: arguments validated against the tool's
// schema (a failure names the field), failures mapped to tool errors (002 §7), and the result
// shaped as MCP wants it (001 §4.1: content[].text is a JSON string, plus structuredContent).
import { FarmError } from '@capture/farm';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { isStoreOutage } from '../store/database.ts';
import type { ToolCall, ToolDefinition } from './tool-definition.ts';
import { ToolError, toolErrorResult } from './tool-error.ts';

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length > 0 ? issue.path.join('.') : 'arguments';
  return `${field}: ${issue.message}`;
}

/** SQLSTATEs from the caller's queries that are the caller's business, not ours. */
function toolErrorFromDatabase(error: unknown): ToolError | undefined {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === '42501') return new ToolError('permission_denied', message, { cause: error });
  if (code === 'PT404') return new ToolError('not_found', message, { cause: error });
  if (code === '22023' || code === '22004' || code === '22P02' || code === '22007') {
    return new ToolError('invalid_arguments', message, { cause: error });
  }
  if (code === '57014') {
    return new ToolError('unavailable', 'The query took longer than 8 s; narrow it.', {
      cause: error,
    });
  }
  if (isStoreOutage(error)) {
    return new ToolError('unavailable', 'The data store is unavailable; retry shortly.', {
      cause: error,
    });
  }
  return undefined;
}

/** A farm failure as the tool error of the same code (the farm's codes are a subset of ours). */
function toolErrorFromFarm(error: unknown): ToolError | undefined {
  if (!(error instanceof FarmError)) return undefined;
  return new ToolError(error.code, error.message, { cause: error });
}

/** Validates arguments against the tool's schema; a failure names each field. */
export function parseArguments(
  schema: z.ZodObject,
  rawArguments: unknown,
): { ok: true; args: Record<string, unknown> } | { ok: false; error: ToolError } {
  const parsed = schema.safeParse(rawArguments ?? {});
  if (parsed.success) return { ok: true, args: parsed.data as Record<string, unknown> };
  return {
    ok: false,
    error: new ToolError('invalid_arguments', parsed.error.issues.map(describeIssue).join('; ')),
  };
}

export type RunOutcome = { ok: true; output: unknown } | { ok: false; error: ToolError };

/** Runs a tool whose caller and arguments have been checked; every failure becomes a ToolError. */
export async function runTool(
  tool: ToolDefinition,
  args: Record<string, unknown>,
  call: ToolCall,
  logger: Logger,
): Promise<RunOutcome> {
  try {
    return { ok: true, output: await tool.run(call, args) };
  } catch (error) {
    const known =
      error instanceof ToolError
        ? error
        : (toolErrorFromFarm(error) ?? toolErrorFromDatabase(error));
    if (known) {
      if (known.code === 'unavailable') {
        logger.warn({ err: error, tool: tool.name }, 'tool unavailable');
      }
      return { ok: false, error: known };
    }
    logger.error({ err: error, tool: tool.name }, 'tool failed');
    return { ok: false, error: new ToolError('failed', `${tool.name} failed unexpectedly.`) };
  }
}

/** The tool result of an outcome: `content[].text` is the output as JSON (001 §4.1). */
export function resultOf(tool: ToolDefinition, outcome: RunOutcome) {
  if (!outcome.ok) return toolErrorResult(outcome.error);
  const { output, images } = tool.splitContent
    ? tool.splitContent(outcome.output as never)
    : { output: outcome.output, images: [] };
  return {
    content: [
      { type: 'text' as const, text: JSON.stringify(output) },
      ...images.map((image) => ({ type: 'image' as const, ...image })),
    ],
    structuredContent: output as Record<string, unknown>,
  };
}
