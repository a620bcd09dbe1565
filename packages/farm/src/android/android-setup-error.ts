// The one error type of the Android-over-USB set-up (docs/farm.md "Android devices"): a stable
// code callers branch on, a message a person can act on, and the adb output as the cause.

export type AndroidSetupErrorCode =
  /** No adb server answers on the configured port, or the adb binary is missing. */
  | 'adb_unavailable'
  /** No phone attached, or none with the serial asked for. */
  | 'no_device'
  /** Several phones attached and no serial chosen: `serials` lists them. */
  | 'several_devices'
  /** The phone has not accepted this computer's USB debugging key yet. */
  | 'device_unauthorized'
  /** Attached but not usable (offline, booting, in recovery, no USB permission). */
  | 'device_offline'
  /** The capture proxy's CA certificate could not be fetched. */
  | 'proxy_unavailable'
  /** A serial, host, port or URL that is not well formed. */
  | 'bad_input'
  /** adb ran and it, or the command on the phone, reported a failure. */
  | 'command_failed'
  /** An adb run did not finish within its time limit. */
  | 'timeout';

export class AndroidSetupError extends Error {
  readonly code: AndroidSetupErrorCode;
  /** For `several_devices`: the serials to choose from. */
  readonly serials: readonly string[];

  constructor(
    code: AndroidSetupErrorCode,
    message: string,
    options: { cause?: unknown; serials?: readonly string[] } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AndroidSetupError';
    this.code = code;
    this.serials = options.serials ?? [];
  }
}
