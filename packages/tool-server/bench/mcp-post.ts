// One MCP tools/call as a 2025-era client POSTs it (a JSON-RPC request over Streamable HTTP,
// answered as JSON or as one SSE event), for the benchmarks that time raw calls without an SDK
// client in the way; and the JSON-RPC message of such an answer.

export interface ToolCallMessage {
  error?: unknown;
  result?: {
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
    content?: Array<{ type: string }>;
  };
}

let rpcId = 0;

export function postToolCall(
  url: string,
  token: string,
  name: string,
  args: object,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++rpcId,
      method: 'tools/call',
      params: { name, arguments: args },
    }),
  });
}

/** The message of an answer body; throws on a body that is not JSON-RPC. */
export function toolCallMessageOf(body: string): ToolCallMessage {
  const json = body.startsWith('event:') ? (/^data: (.*)$/m.exec(body)?.[1] ?? '') : body;
  return JSON.parse(json) as ToolCallMessage;
}

/** A JSON-RPC error, a tool error, or a body that is not JSON-RPC at all. */
export function toolCallFailed(body: string): boolean {
  try {
    const message = toolCallMessageOf(body);
    return message.error !== undefined || message.result?.isError === true;
  } catch {
    return true;
  }
}
