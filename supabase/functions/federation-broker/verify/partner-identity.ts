// What a verify mode proves about the partner user (000 §4.1): who they are at the partner, and
// which e-mail the partner vouches for.

export interface PartnerIdentity {
  /** The partner's stable user identifier; identities are keyed on it (000 §4.5). */
  sub: string;
  /** The e-mail as the partner sent it; undefined when it is absent or not verified. */
  email: string | undefined;
  /** HMAC mode: the jti to burn and when it may be forgotten (000 §2.4). */
  jti?: { value: string; expiresAt: Date };
}
