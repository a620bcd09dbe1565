// Failures a tool reports to the model as a tool result with isError (MCP tools: "errors
// originating from the tool should be reported inside the result"), from a closed set of codes;
// protocol errors stay for protocol faults. The message is for the model and the user; the cause
// only reaches the logs.

export type ToolErrorCode =
  | 'permission_denied'
  | 'invalid_arguments'
  | 'not_found'
  | 'confirmation_required'
  | 'confirmation_refused'
  | 'unavailable'
  | 'failed';

export class ToolError extends Error {
  readonly code: ToolErrorCode;

  constructor(code: ToolErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'ToolError';
    this.code = code;
  }
}

/** The tool result for a failure: `content[].text` is a JSON string (001 §4.1). */
export function toolErrorResult(error: ToolError) {
  const body = { error: error.code, message: error.message };
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(body) }] };
}
