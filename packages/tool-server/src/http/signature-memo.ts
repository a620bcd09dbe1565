// Access tokens whose signature, audience and issuer were already checked, kept until they
// expire: an agent sends the same token with every call, and jose's HS256 check runs through
// WebCrypto, a thread-pool round trip that was a twentieth of a tool call (docs/tool-server.md,
// "Round 2"). Only that check is remembered; whether the token is still live (revoked, its
// account suspended) is asked of the store on every request (bearer-auth.ts).

export class SignatureMemo {
  readonly #checked = new Map<string, Record<string, unknown>>();
  readonly #capacity: number;

  /** At most `capacity` tokens are remembered; past that, the longest remembered is forgotten. */
  constructor(capacity = 10_000) {
    this.#capacity = capacity;
  }

  /** The claims of `token` as checked for `origin`, while it is unexpired (`exp`, RFC 7519 §4.1.4). */
  claimsOf(origin: string, token: string): Record<string, unknown> | undefined {
    const key = `${origin} ${token}`;
    const claims = this.#checked.get(key);
    if (claims === undefined) return undefined;
    if (Number(claims.exp) > Math.floor(Date.now() / 1000)) return claims;
    this.#checked.delete(key);
    return undefined;
  }

  remember(origin: string, token: string, claims: Record<string, unknown>): void {
    if (typeof claims.exp !== 'number') return; // never a token without an end
    if (this.#checked.size >= this.#capacity) {
      const oldest = this.#checked.keys().next().value;
      if (oldest !== undefined) this.#checked.delete(oldest);
    }
    this.#checked.set(`${origin} ${token}`, claims);
  }
}
