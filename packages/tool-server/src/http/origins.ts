// Which of our configured origins a request was addressed to (001 §4.1: issuer and endpoints
// derive from the host called). Only allowlisted Host values are served: anything else is refused,
// so a rebinding DNS name or a forged Host can never make us publish its URL as our issuer.

export class Origins {
  readonly canonical: string;
  readonly all: readonly string[];
  private readonly byHost: Map<string, string>;

  constructor(origins: readonly string[]) {
    if (origins.length === 0) throw new Error('at least one origin is required');
    this.all = origins.map((origin) => new URL(origin).origin);
    this.canonical = this.all[0] as string;
    this.byHost = new Map(this.all.map((origin) => [new URL(origin).host, origin]));
  }

  /**
   * The origin named by a Host header, compared as URL parsing normalises it (case, default
   * port); undefined for any host we do not serve.
   */
  fromHost(host: string | undefined | null): string | undefined {
    if (!host || host.length > 300 || /[\s/\\@?#]/.test(host)) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(`http://${host}`);
    } catch {
      return undefined;
    }
    if (parsed.username || parsed.password) return undefined;
    return this.byHost.get(parsed.host);
  }
}
