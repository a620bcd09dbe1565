// Which of our configured origins a request was addressed to (001 §4.1: issuer and endpoints
// derive from the host called). Only allowlisted Host values are served: anything else is refused,
// so a rebinding DNS name or a forged Host can never make us publish its URL as our issuer.

export class Origins {
  readonly all: readonly string[];
  private readonly parsed: URL[];

  constructor(origins: readonly string[]) {
    if (origins.length === 0) throw new Error('at least one origin is required');
    this.parsed = origins.map((origin) => new URL(new URL(origin).origin));
    this.all = this.parsed.map((url) => url.origin);
  }

  /**
   * The origin named by a Host header, compared as URL parsing normalises it (case, default
   * port); undefined for any host we do not serve.
   */
  fromHost(host: string | undefined | null): string | undefined {
    if (!host || host.length > 300 || /[\s/\\@?#]/.test(host)) return undefined;
    // Parsed with each origin's scheme, so `host:443` names an https origin's bare host.
    const match = this.parsed.find((origin) => {
      try {
        return new URL(`${origin.protocol}//${host}`).host === origin.host;
      } catch {
        return false;
      }
    });
    return match?.origin;
  }
}
