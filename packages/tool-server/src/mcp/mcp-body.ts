// An MCP POST's body, read once: fair-use admission looks for tools/call in it (tool-call-gate.ts)
// and the SDK is handed it parsed (its `parsedBody`), instead of each teeing the request and
// parsing its own copy. Bounded as the SDK bounds the bodies it reads itself.
import { bodyLimit } from 'hono/body-limit';

/** The SDK's default `maxRequestBodySize`, which no longer applies once we hand it a parsed body. */
const MCP_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** 413 with the JSON-RPC error the SDK answers for an oversized body, before it is all read. */
export const mcpBodyLimit = bodyLimit({
  maxSize: MCP_BODY_LIMIT_BYTES,
  onError: () =>
    Response.json(
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32000,
          message: `Payload Too Large: Request body must not exceed ${MCP_BODY_LIMIT_BYTES} bytes`,
        },
      },
      // The rest of the body is never read: the client must not send its next request after it
      // on this connection (RFC 9112 §9.6).
      { status: 413, headers: { connection: 'close' } },
    ),
});

export interface McpBody {
  /** The request to hand the SDK: the original, or (for a body that is not JSON) a copy of it. */
  request: Request;
  /** The JSON body of a POST; undefined for other methods and for a body that is not JSON. */
  parsedBody?: unknown;
}

export async function readMcpBody(request: Request): Promise<McpBody> {
  if (request.method !== 'POST') return { request };
  const text = await request.text();
  try {
    return { request, parsedBody: JSON.parse(text) };
  } catch {
    // Not JSON: the SDK reads the text again from a copy and answers it (-32700).
    return { request: new Request(request, { body: text }) };
  }
}
