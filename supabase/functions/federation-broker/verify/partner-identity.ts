// What a verify mode proves about the partner user (000 §4.1): who they are at the partner, and
// which e-mail the partner vouches for.

export interface PartnerIdentity {
  /** The partner's stable user identifier; identities are keyed on it (000 §4.5). */
  sub: string;
  /** The e-mail as the partner sent it; undefined when absent or marked unverified. */
  email: string | undefined;
  /**
   * The partner's `email_verified` claim, when it sent one. Only `true`, or the client being
   * marked as verifying every e-mail, makes the e-mail trusted (see trustedEmail).
   */
  emailVerified?: boolean;
  /** HMAC mode: the jti to burn and when it may be forgotten (000 §2.4). */
  jti?: { value: string; expiresAt: Date };
}

/**
 * The `email` and `email_verified` claims of a users/me answer or a token: an e-mail marked
 * unverified is withheld, and the claim is kept for trustedEmail.
 */
export function emailClaims(
  claims: Record<string, unknown>,
): Pick<PartnerIdentity, 'email' | 'emailVerified'> {
  const verified = typeof claims.email_verified === 'boolean' ? claims.email_verified : undefined;
  const email = typeof claims.email === 'string' && verified !== false ? claims.email : undefined;
  return { email, emailVerified: verified };
}

/**
 * The e-mail provisioning may use (reference A: "use email only together with
 * email_verified === true, or when the client is marked as verifying emails"). An HMAC assertion
 * is signed by the partner's own backend, which vouches for what it signs.
 */
export function trustedEmail(
  identity: PartnerIdentity,
  mode: 'backend_bearer' | 'hmac' | 'hosted_jwt',
  clientVerifiesEmails: boolean,
): string | undefined {
  if (identity.email === undefined || mode === 'hmac') return identity.email;
  if (identity.emailVerified === true) return identity.email;
  return identity.emailVerified === undefined && clientVerifiesEmails ? identity.email : undefined;
}
