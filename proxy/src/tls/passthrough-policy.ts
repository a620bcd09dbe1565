// Which TLS tunnels the proxy leaves alone (issue: hosts that pin certificates). Two sources:
// a configured list of host patterns (`pinned.example`, `*.apple.com`, like mitmproxy's
// ignore_hosts and Charles's exclude locations), and hosts learned at run time because a client
// refused our certificate (the automatic fail-open users ask for: mitmproxy#8075, #8083).
// Learned hosts are per process and expire, so a host whose client later trusts the CA is
// intercepted again.

export interface PassthroughDecision {
  reason: 'configured' | 'handshake_failed';
  detail: string;
}

const LEARNED_TTL_MS = 24 * 3600 * 1000;

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

  constructor(patterns: string[] = [], now: () => number = Date.now) {
    this.configured = patterns
      .filter((pattern) => pattern.trim() !== '')
      .map((pattern) => ({ pattern, matches: compile(pattern) }));
    this.now = now;
  }

  decide(host: string): PassthroughDecision | null {
    const name = host.toLowerCase();
    const rule = this.configured.find((entry) => entry.matches(name));
    if (rule) return { reason: 'configured', detail: `matches ${rule.pattern}` };
    const learned = this.learned.get(name);
    if (learned && learned.until > this.now()) {
      return { reason: 'handshake_failed', detail: learned.detail };
    }
    if (learned) this.learned.delete(name);
    return null;
  }

  /** A client refused our certificate for `host`: pass its next tunnels through. */
  learn(host: string, detail: string): void {
    this.learned.set(host.toLowerCase(), { detail, until: this.now() + LEARNED_TTL_MS });
  }

  learnedHosts(): string[] {
    return [...this.learned.keys()];
  }
}
