// The MCP endpoint (001 §4.1): the official SDK's dual-era handler (2025-11-25 `initialize` and
// 2026-07-28 per-request `_meta`, `server/discover`, `subscriptions/listen`), with a low-level
// Server per request whose tools/list is computed for the caller (so its cache scope is private)
// and whose tools/call runs as the caller. Hand-written beside the SDK: the tool list per caller,
// the 2025-era GET listen stream (listen-streams.ts) and the cross-instance deploy bus
// (deploy-announcer.ts). A tools/call admitted by the fair-use gate (tool-call-gate.ts) counts in
// flight until it has run.
import {
  createMcpHandler,
  type McpHttpHandler,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { PRODUCT_NAME } from '../oauth/metadata.ts';
import type { CallerProfile } from './caller-profile.ts';
import type { AdmissionTicket } from './tool-call-admission.ts';
import { callTool, listToolsFor } from './tool-calls.ts';
import type { ToolCall } from './tool-definition.ts';
import { currentWidgets, WIDGET_MIME_TYPE, widgetForUri } from './widgets.ts';

export interface McpEndpointOptions {
  buildNumber: string;
  logger: Logger;
  /** Farm approvals may be asked in the client by elicitation (config `approvalsInClient`). */
  approvalsInClient: boolean;
  /** What a tool call may use, for this caller and the bearer token they came with. */
  toolCallFor(caller: CallerProfile, accessToken: string): ToolCall;
}

const INSTRUCTIONS =
  'Tools over the captured HTTP(S) traffic of your devices, under your role: list_devices, ' +
  'summarize_device_traffic and inspect_requests to find and read captures (secrets come back ' +
  'redacted), get_stats and get_status for the fleet, breakpoints, workspaces and tags.';

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function buildServer(
  caller: CallerProfile,
  accessToken: string,
  ticket: AdmissionTicket | undefined,
  options: McpEndpointOptions,
): Server {
  const server = new Server(
    { name: PRODUCT_NAME, version: options.buildNumber, title: 'Capture platform' },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true } },
      instructions: INSTRUCTIONS,
    },
  );
  const call = options.toolCallFor(caller, accessToken);
  server.setRequestHandler('tools/list', () => listToolsFor(call));
  server.setRequestHandler('tools/call', async (request, context) => {
    // Admitted calls count in flight while they run; one not admitted (its exchange already over)
    // is not run.
    if (ticket && !ticket.begin()) {
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'This tool call was not admitted.');
    }
    try {
      return await callTool(request.params.name, request.params.arguments, call, options.logger, {
        // Only on 2026-07-28 requests (their envelope declares the client's capabilities): a
        // stateless 2025-era request has no way to carry the user's answer back. Never where the
        // deployment takes approvals from the dashboard alone.
        supported:
          options.approvalsInClient &&
          context.mcpReq.envelope !== undefined &&
          server.getClientCapabilities()?.elicitation !== undefined,
        responses: context.mcpReq.inputResponses,
        requestState: stringOrUndefined(context.mcpReq.requestState?.()),
      });
    } finally {
      ticket?.end();
    }
  });
  server.setRequestHandler('resources/list', () => ({
    resources: currentWidgets().map((widget) => ({
      uri: widget.uri,
      name: widget.name,
      mimeType: WIDGET_MIME_TYPE,
    })),
    ttlMs: 60_000,
    cacheScope: 'public' as const,
  }));
  // The resources capability includes templates; there are none (widgets have fixed URIs).
  server.setRequestHandler('resources/templates/list', () => ({
    resourceTemplates: [],
    ttlMs: 60_000,
    cacheScope: 'public' as const,
  }));
  server.setRequestHandler('resources/read', (request) => {
    const widget = widgetForUri(request.params.uri);
    if (!widget) {
      // SEP-2164: -32602, with the URI asked for in data.
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `No such resource: ${request.params.uri}`,
        { uri: request.params.uri },
      );
    }
    // 001 §6: an old widget hash is answered with the current bundle.
    return {
      contents: [{ uri: request.params.uri, mimeType: WIDGET_MIME_TYPE, text: widget.html }],
    };
  });
  return server;
}

export function createMcpEndpoint(options: McpEndpointOptions): McpHttpHandler {
  return createMcpHandler(
    (context) => {
      const caller = context.authInfo?.extra?.caller as CallerProfile | undefined;
      const token = context.authInfo?.token;
      if (!caller || !token) {
        throw new Error('the MCP endpoint was reached without a verified caller');
      }
      const ticket = context.authInfo?.extra?.admission as AdmissionTicket | undefined;
      return buildServer(caller, token, ticket, options);
    },
    { onerror: (error) => options.logger.debug({ err: error }, 'mcp request refused') },
  );
}
