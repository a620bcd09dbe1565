// tools/list and tools/call for one caller. Listing shows only the tools the caller's capabilities
// allow (a convenience, 001 §4.1); a call checks again and refuses with a permission error as a
// tool error (002 §7), because the check on call is the boundary. Arguments are validated against
// the tool's schema and a failure names the field. Results carry content[].text as a JSON string
// (001 §4.1) plus structuredContent.
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  ApprovalRequiredSchema,
  type ElicitationRound,
  withPendingAction,
} from '../farm-tools/approval-results.ts';
import { callFarmTool } from '../farm-tools/farm-tool-call.ts';
import type { CallerProfile } from './caller-profile.ts';
import { TOOL_CATALOG } from './tool-catalog.ts';
import { capabilityName, type ToolCall, type ToolDefinition } from './tool-definition.ts';
import { ToolError, toolErrorResult } from './tool-error.ts';
import { parseArguments, resultOf, runTool } from './tool-run.ts';
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
  const gated = tool.confirm !== undefined;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchemaOf(gated ? withPendingAction(tool.input) : tool.input, 'input'),
    outputSchema: gated ? gatedOutputSchema(tool.output) : jsonSchemaOf(tool.output, 'output'),
    annotations: { title: tool.title, ...tool.annotations },
    ...(uri ? { _meta: { ui: { resourceUri: uri } } } : {}),
  };
}

/** A confirm-gated tool's answer while a person has not approved: listed beside the result. */
function gatedOutputSchema(output: z.ZodObject): ObjectSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(z.union([ApprovalRequiredSchema, output]), {
    io: 'output',
    unrepresentable: 'any',
  });
  return { ...rest, type: 'object' };
}

export function mayUse(caller: CallerProfile, tool: ToolDefinition): boolean {
  return caller.capabilities.has(capabilityName(tool.requires));
}

/** Farm tools exist only where this server has a farm. */
function isOffered(tool: ToolDefinition, call: ToolCall): boolean {
  return !tool.farm || call.farm !== null;
}

export function listToolsFor(call: ToolCall) {
  return {
    tools: TOOL_CATALOG.filter((tool) => isOffered(tool, call) && mayUse(call.caller, tool)).map(
      describeTool,
    ),
    ttlMs: LIST_TTL_MS,
    cacheScope: 'private' as const,
  };
}

function permissionDenied(tool: ToolDefinition): ToolError {
  return new ToolError(
    'permission_denied',
    `permission denied: ${tool.name} needs the capability ${capabilityName(tool.requires)}, ` +
      'which your role does not hold.',
  );
}

export async function callTool(
  name: string,
  rawArguments: unknown,
  call: ToolCall,
  logger: Logger,
  elicitation?: ElicitationRound,
) {
  const tool = TOOL_CATALOG.find((candidate) => candidate.name === name);
  if (!tool || !isOffered(tool, call)) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
  }
  if (tool.farm && call.farm) {
    return callFarmTool(
      tool,
      rawArguments,
      { ...call, farm: call.farm },
      logger,
      {
        permits: (caller) => mayUse(caller, tool),
        permissionDenied: permissionDenied(tool),
      },
      elicitation,
    );
  }
  if (!mayUse(call.caller, tool)) return toolErrorResult(permissionDenied(tool));
  const parsed = parseArguments(tool.input, rawArguments);
  if (!parsed.ok) return toolErrorResult(parsed.error);
  const lane = tool.lane?.(parsed.args) ?? 'standard';
  // A tool that declares itself read-only runs in read-only transactions: Postgres refuses its writes.
  const readOnly = tool.annotations.readOnlyHint;
  const inLane: ToolCall = { ...call, asCaller: (work) => call.asCaller(work, { lane, readOnly }) };
  return resultOf(tool, await runTool(tool, parsed.args, inLane, logger));
}
