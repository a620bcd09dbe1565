// The MCP endpoint at POST / (001 §4.1), served by the official SDK's dual-era handler. This
// issue brings the authorization in front of it; the tools arrive with the MCP issue.
import { createMcpHandler, type McpHttpHandler, McpServer } from '@modelcontextprotocol/server';
import { PRODUCT_NAME } from '../oauth/metadata.ts';

export function createMcpEndpoint(buildNumber: string): McpHttpHandler {
  return createMcpHandler(
    () =>
      new McpServer(
        { name: PRODUCT_NAME, version: buildNumber },
        { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } },
      ),
  );
}
