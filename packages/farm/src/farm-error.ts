// The one error type of the farm's boundary (house style "Errors"): a stable code from a closed
// set that callers branch on, a message a person or a model can act on, and the internal cause for
// the logs only. The tool server answers each as the MCP tool error of the same code.

export type FarmErrorCode =
  /** The caller may not do this (a role without devices:edit creating their farm device). */
  | 'permission_denied'
  /** The request cannot run as given (two package sources, a file that is not an APK). */
  | 'invalid_arguments'
  /** No such thing of the caller's: a device, a session, a package (nothing said of others'). */
  | 'not_found'
  /** A destructive operation reached without a person's approval (docs/farm.md "Gating"). */
  | 'confirmation_required'
  /** The farm cannot do it now: busy, shutting down, no proxy, a device offline. Retry. */
  | 'unavailable'
  /** It ran and failed: the device refused, the page did not load. */
  | 'failed';

export class FarmError extends Error {
  readonly code: FarmErrorCode;

  constructor(code: FarmErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'FarmError';
    this.code = code;
  }
}
