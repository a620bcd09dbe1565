// The broker's one error type: a stable public code from a closed set (000 §7), the message
// clients see, and an internal cause that only logs get.

export const BROKER_ERRORS = {
  invalid_request: 400,
  access_denied: 401,
  verifier_mismatch: 401,
  not_found: 404,
  method_not_allowed: 405,
  code_gone: 410,
  payload_too_large: 413,
  rate_limited: 429,
  server_error: 500,
} as const;

export type BrokerErrorCode = keyof typeof BROKER_ERRORS;

const PUBLIC_MESSAGES: Record<BrokerErrorCode, string> = {
  invalid_request: 'The request is missing a required field or has a malformed one.',
  // 000 §7: unknown client, disabled client and rejected credential are one opaque answer.
  access_denied: 'The client or the user credential was rejected.',
  verifier_mismatch: 'The code_verifier does not match the code_challenge.',
  not_found: 'No such endpoint.',
  method_not_allowed: 'Use POST.',
  // 000 §7: used, expired and unknown codes are indistinguishable.
  code_gone: 'The code is no longer valid.',
  payload_too_large: 'The request body is too large.',
  rate_limited: 'Too many requests; try again shortly.',
  server_error: 'The hand-off failed on our side.',
};

export class BrokerError extends Error {
  readonly code: BrokerErrorCode;
  /** Internal reason for the logs (never shown to the client). */
  readonly reason: string;

  constructor(
    code: BrokerErrorCode,
    reason: string,
    options?: { cause?: unknown; message?: string },
  ) {
    super(options?.message ?? PUBLIC_MESSAGES[code], { cause: options?.cause });
    this.name = 'BrokerError';
    this.code = code;
    this.reason = reason;
  }

  get status(): number {
    return BROKER_ERRORS[this.code];
  }
}
