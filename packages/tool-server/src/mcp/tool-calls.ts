// tools/list and tools/call for one caller. Listing shows only the tools the caller's capabilities
// allow (a convenience, 001 §4.1); a call checks again and refuses with a permission error as a
// tool error (002 §7), because the check on call is the boundary. Arguments are validated against
// the tool's schema and a failure names the field. Results carry content[].text as a JSON string
// (001 §4.1) plus structuredContent.
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isStoreOutage } from '../store/database.ts';
import type { CallerProfile } from './caller-profile.ts';
import { TOOL_CATALOG } from './tool-catalog.ts';
import { capabilityName, type ToolCall, type ToolDefinition } from './tool-definition.ts';
import { ToolError, toolErrorResult } from './tool-error.ts';
import { widgetUri } from './widgets.ts';

/** How long a client may cache its tool list: it is per user (a role change alters it). */
const LIST_TTL_MS = 60_000;

type ObjectSchema = { type: 'object'; [keyword: string]: unknown };

/** The JSON Schema of a tool's zod object, without the dialect line (MCP assumes 2020-12). */
function jsonSchemaOf(schema: z.ZodObject, io: 'input' | 'output'): ObjectSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return { ...rest, type: 'object' };
}

function describeTool(tool: ToolDefinition) {
  const uri = tool.widget ? widgetUri(tool.widget) : undefined;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchemaOf(tool.input, 'input'),
    outputSchema: jsonSchemaOf(tool.output, 'output'),
    annotations: { title: tool.title, ...tool.annotations },
    ...(uri ? { _meta: { ui: { resourceUri: uri } } } : {}),
  };
}

export function mayUse(caller: CallerProfile, tool: ToolDefinition): boolean {
  return caller.capabilities.has(capabilityName(tool.requires));
}

export function listToolsFor(caller: CallerProfile) {
  return {
    tools: TOOL_CATALOG.filter((tool) => mayUse(caller, tool)).map(describeTool),
    ttlMs: LIST_TTL_MS,
    cacheScope: 'private' as const,
  };
}

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

export async function callTool(
  name: string,
  rawArguments: unknown,
  call: ToolCall,
  logger: Logger,
) {
  const tool = TOOL_CATALOG.find((candidate) => candidate.name === name);
  if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
  if (!mayUse(call.caller, tool)) {
    return toolErrorResult(
      new ToolError(
        'permission_denied',
        `permission denied: ${name} needs the capability ${capabilityName(tool.requires)}, which ` +
          'your role does not hold.',
      ),
    );
  }
  const parsed = tool.input.safeParse(rawArguments ?? {});
  if (!parsed.success) {
    return toolErrorResult(
      new ToolError('invalid_arguments', parsed.error.issues.map(describeIssue).join('; ')),
    );
  }
  try {
    const output = await tool.run(call, parsed.data);
    return {
      content: [{ type: 'text' as const, text: JSON.stringify(output) }],
      structuredContent: output as Record<string, unknown>,
    };
  } catch (error) {
    const known = error instanceof ToolError ? error : toolErrorFromDatabase(error);
    if (known) {
      if (known.code === 'unavailable') logger.warn({ err: error, tool: name }, 'tool unavailable');
      return toolErrorResult(known);
    }
    logger.error({ err: error, tool: name }, 'tool failed');
    return toolErrorResult(new ToolError('failed', `${name} failed unexpectedly.`));
  }
}
