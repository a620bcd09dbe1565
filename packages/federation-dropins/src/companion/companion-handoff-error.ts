// The one error of the companion-app side of the hand-off: a closed set of codes callers branch
// on. Messages never carry the code, the verifier or a token (house style, 000 §1 rule 2).

export type CompanionHandoffErrorCode =
  /** The URL is not one of the three hand-off link forms (000 §4.2). */
  | 'malformed_link'
  /** The verifier appeared in the query, so it may have reached a server (000 §1 rule 2). */
  | 'verifier_exposed'
  /** 400 from /exchange: code or verifier missing (000 §7). */
  | 'invalid_request'
  /** 401 from /exchange: the verifier does not match; the code stays usable (000 §3). */
  | 'verifier_mismatch'
  /** 410 from /exchange: used, expired or unknown, indistinguishable on purpose (000 §7). */
  | 'code_expired'
  | 'rate_limited'
  | 'broker_unavailable'
  | 'invalid_response'
  /** The app's confirmation step said no; the minted session was revoked. */
  | 'declined'
  /**
   * Another user is signed in and no `confirm` step was given: the switch is never silent (login
   * CSRF, reference A0); the minted session was revoked and the active account kept.
   */
  | 'confirmation_required'
  /** supabase-js refused the session, or it belongs to another user than /exchange named. */
  | 'session_rejected';

export class CompanionHandoffError extends Error {
  readonly code: CompanionHandoffErrorCode;
  readonly status: number | undefined;

  constructor(
    code: CompanionHandoffErrorCode,
    message: string,
    options?: { status?: number; cause?: unknown },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'CompanionHandoffError';
    this.code = code;
    this.status = options?.status;
  }
}
