// The dashboard server's one error type: a stable code callers branch on, a message for people.

export type DashboardServerErrorCode = 'dist_missing' | 'bad_config';

export class DashboardServerError extends Error {
  readonly code: DashboardServerErrorCode;

  constructor(code: DashboardServerErrorCode, message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'DashboardServerError';
    this.code = code;
  }
}
