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

/**
 * Node names a taken port EADDRINUSE; a child process names it in its own words on the way out:
 * PostgREST (Haskell's network library) "resource busy (Address in use)", Postgres and GoTrue
 * "address already in use". Free-port starts retry on any of them.
 */
const ADDRESS_IN_USE = /EADDRINUSE|address (already )?in use/i;

export function isAddressInUse(error: unknown): boolean {
  if (error instanceof StackError && error.code === 'port_in_use') return true;
  return (
    error instanceof Error && ADDRESS_IN_USE.test(`${error.message} ${String(error.cause ?? '')}`)
  );
}
