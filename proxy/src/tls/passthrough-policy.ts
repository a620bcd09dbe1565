// Which TLS tunnels the proxy leaves alone, for hosts that pin certificates (docs/proxy.md "What
// happens to a request", Passthrough). Two sources: a configured list of host patterns
// (`pinned.example`, `*.apple.com`, like mitmproxy's ignore_hosts and Charles's exclude locations),
// and hosts learned at run time because a client refused our certificate (the automatic fail-open
// users ask for: mitmproxy#8075, #8083). Learning is per client address and host, so one device
// without the CA installed does not turn interception off for everyone; it is per daemon (its
// worker processes pass each pair to the others, workers/worker-link.ts) and expires, so a client
// that later installs the CA is intercepted again.

/** A pair learned here, for sibling worker processes to `adopt`. */
export interface LearnedPassthrough {
  host: string;
  client: string | null;
  detail: string;
}

export interface PassthroughDecision {
  reason: 'configured' | 'handshake_failed';
  detail: string;
}

const LEARNED_TTL_MS = 3600 * 1000;
/** Pairs kept at most; the oldest go first. */
const LEARNED_CAPACITY = 10_000;

function compile(pattern: string): (host: string) => boolean {
  const normalized = pattern.trim().toLowerCase();
  if (normalized.startsWith('*.')) {
    const suffix = normalized.slice(1); // ".apple.com"
    return (host) => host.endsWith(suffix) && host.length > suffix.length;
  }
  return (host) => host === normalized;
}

export class PassthroughPolicy {
  private readonly configured: Array<{ pattern: string; matches: (host: string) => boolean }>;
  private readonly learned = new Map<string, { detail: string; until: number }>();
  private readonly now: () => number;
  private relay: ((learned: LearnedPassthrough) => void) | undefined;

  constructor(patterns: string[] = [], now: () => number = Date.now) {
    this.configured = patterns
      .filter((pattern) => pattern.trim() !== '')
      .map((pattern) => ({ pattern, matches: compile(pattern) }));
    this.now = now;
  }

  decide(host: string, client: string | null): PassthroughDecision | null {
    const name = host.toLowerCase();
    const rule = this.configured.find((entry) => entry.matches(name));
    if (rule) return { reason: 'configured', detail: `matches ${rule.pattern}` };
    const key = `${client ?? '?'} ${name}`;
    const learned = this.learned.get(key);
    if (learned && learned.until > this.now()) {
      return { reason: 'handshake_failed', detail: learned.detail };
    }
    if (learned) this.learned.delete(key);
    return null;
  }

  /** Every pair learned from now on also goes to `relay` (a worker's siblings). */
  relayTo(relay: (learned: LearnedPassthrough) => void): void {
    this.relay = relay;
  }

  /** `client` refused our certificate for `host`: pass its next tunnels there through. */
  learn(host: string, client: string | null, detail: string): void {
    this.adopt({ host, client, detail });
    this.relay?.({ host, client, detail });
  }

  /** A pair a sibling worker learned: kept as if learned here, and not relayed again. */
  adopt({ host, client, detail }: LearnedPassthrough): void {
    const key = `${client ?? '?'} ${host.toLowerCase()}`;
    this.learned.delete(key);
    this.learned.set(key, { detail, until: this.now() + LEARNED_TTL_MS });
    if (this.learned.size > LEARNED_CAPACITY) {
      this.learned.delete(this.learned.keys().next().value as string);
    }
  }

  /** `"<client> <host>"` pairs currently passed through after a refused handshake. */
  learnedPairs(): string[] {
    return [...this.learned.keys()];
  }
}
