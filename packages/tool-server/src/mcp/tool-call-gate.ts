// The HTTP face of tool-call admission (docs/tool-server.md "Fair use"): which MCP POSTs carry
// tools/call requests, the 429 a refused one gets (before any pool is touched), and an admitted
// one's calls held in flight until its answer has been written or its client has gone.
import {
  type AdmissionRefusal,
  AdmissionTicket,
  type ToolCallAdmission,
} from './tool-call-admission.ts';

type JsonRpcId = string | number | null;

/**
 * Our JSON-RPC code for "too many requests": JSON-RPC leaves -32000 to -32099 to servers and MCP
 * defines none for this. Clients branch on HTTP 429 or `data.error`, which are stable.
 */
const TOO_MANY_REQUESTS_CODE = -32029;

function isToolCallRequest(message: unknown): message is { id: string | number } {
  if (typeof message !== 'object' || message === null) return false;
  const { method, id } = message as { method?: unknown; id?: unknown };
  return method === 'tools/call' && (typeof id === 'string' || typeof id === 'number');
}

/** The tools/call requests of a POST body: one, or several in a 2025-03-26 batch. */
function findToolCalls(body: unknown): { count: number; id: JsonRpcId } {
  const calls = (Array.isArray(body) ? body : [body]).filter(isToolCallRequest);
  return { count: calls.length, id: calls.length === 1 ? (calls[0]?.id ?? null) : null };
}

/**
 * HTTP 429 with Retry-After, and a JSON-RPC error for the request in the body with the same wait
 * in `data.retry_after`: the SDK clients do not expose response headers, but their error carries
 * the body (docs/tool-server.md "Fair use" shows what each client surfaces).
 */
export function tooManyToolCalls(refusal: AdmissionRefusal, id: JsonRpcId): Response {
  const wait = refusal.retryAfterSeconds;
  return Response.json(
    {
      jsonrpc: '2.0',
      id,
      error: {
        code: TOO_MANY_REQUESTS_CODE,
        message: `Too many tool calls: ${refusal.message} Retry after ${wait} s.`,
        data: { error: 'too_many_requests', limit: refusal.limit, retry_after: wait },
      },
    },
    { status: 429, headers: { 'retry-after': String(wait) } },
  );
}

/**
 * Admits the tools/call requests of an MCP request's parsed body (mcp-body.ts; undefined when it
 * has none or it is not JSON): null when it carries none (or fair use is off), the ticket of its
 * calls, or the 429 to answer.
 */
export function admitToolCalls(
  admission: ToolCallAdmission | null,
  parsedBody: unknown,
  claims: Record<string, unknown>,
): AdmissionTicket | Response | null {
  if (!admission || parsedBody === undefined) return null;
  const { count, id } = findToolCalls(parsedBody);
  if (count === 0) return null;
  const admitted = admission.admit(String(claims.jti ?? ''), String(claims.sub ?? ''), count);
  return admitted instanceof AdmissionTicket ? admitted : tooManyToolCalls(admitted, id);
}

/**
 * The response, with the ticket closed once its body has been written out or its client has
 * gone: calls the SDK never ran then stop counting (those that ran end themselves).
 */
export function closeWhenAnswered(response: Response, ticket: AdmissionTicket): Response {
  if (!response.body) {
    ticket.close();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        ticket.close();
        controller.close();
      } catch (error) {
        ticket.close();
        controller.error(error);
      }
    },
    cancel(reason) {
      ticket.close();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
