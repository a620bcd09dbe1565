// The stack's one error type: a stable code callers branch on, a message for people, a cause for logs.

export type StackErrorCode =
  | 'missing_dependency'
  | 'port_in_use'
  | 'data_dir_unreachable'
  | 'start_timeout'
  | 'process_exited'
  | 'migration_failed'
  | 'not_running'
  | 'bad_option';

export class StackError extends Error {
  readonly code: StackErrorCode;

  constructor(code: StackErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StackError';
    this.code = code;
  }
}
