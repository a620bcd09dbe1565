// The official MCP SDK clients as agents use them, connected with a bearer token from the real
// OAuth flow: v1 (`@modelcontextprotocol/sdk`, 2025-era) and v2 (`@modelcontextprotocol/client`)
// in legacy mode and in modern (2026-07-28) mode. One small face over the three, so tests can run
// the same calls through each.
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export type ClientKind = 'v1' | 'v2-legacy' | 'v2-modern';
export const CLIENT_KINDS: readonly ClientKind[] = ['v1', 'v2-legacy', 'v2-modern'];

export interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

export interface ConnectedClient {
  kind: ClientKind;
  serverVersion: { name: string; version: string } | undefined;
  listToolNames(): Promise<string[]>;
  listTools(): Promise<
    Array<{ name: string; annotations?: unknown; _meta?: Record<string, unknown> }>
  >;
  callTool(name: string, args?: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

export async function connectClient(
  kind: ClientKind,
  base: string,
  token: string,
): Promise<ConnectedClient> {
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  const info = { name: `tests-${kind}`, version: '1.0.0' };
  if (kind === 'v1') {
    const client = new V1Client(info);
    await client.connect(new V1Transport(new URL(base), { requestInit }));
    return {
      kind,
      serverVersion: client.getServerVersion(),
      async listToolNames() {
        return (await client.listTools()).tools.map((tool) => tool.name);
      },
      async listTools() {
        return (await client.listTools()).tools;
      },
      async callTool(name, args = {}) {
        return (await client.callTool({ name, arguments: args })) as ToolResult;
      },
      close: () => client.close(),
    };
  }
  const client = new V2Client(info, {
    versionNegotiation: { mode: kind === 'v2-modern' ? 'auto' : 'legacy' },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(base), { requestInit }));
  return {
    kind,
    serverVersion: client.getServerVersion(),
    async listToolNames() {
      return (await client.listTools()).tools.map((tool) => tool.name);
    },
    async listTools() {
      return (await client.listTools()).tools;
    },
    async callTool(name, args = {}) {
      return (await client.callTool({ name, arguments: args })) as ToolResult;
    },
    close: () => client.close(),
  };
}

/** The JSON a tool result carries in content[0].text (001 §4.1). */
export function resultJson(result: ToolResult): Record<string, unknown> {
  const text = result.content[0]?.text;
  if (typeof text !== 'string') throw new Error('the tool result has no text content');
  return JSON.parse(text) as Record<string, unknown>;
}
