// Breakpoint patterns (docs/proxy.md "Breakpoints"): the `breakpoints` list of the
// settings (settings_global merged with settings_device by effective_settings_for_device), each
// `{"pattern": "[METHODS ][scheme://]host[:port][/path[?query]]", "phase": "request" | "response"
// | "both", "enabled": true}` or a bare pattern string (request phase). `*` matches any run of
// characters (dots and slashes too); host and method compare without case, path and query with.
// No path matches every path; the query is compared only when the pattern has a `?`. The syntax
// is Charles's "Breakpoint Settings" location (protocol, host, port, path, query, each optional,
// wildcards) written as one string, with mitmproxy's method filter in front.

export type Phase = 'request' | 'response';

export interface BreakpointPattern {
  /** The pattern as written in the settings (recorded on the event). */
  source: string;
  phases: ReadonlySet<Phase>;
  methods: ReadonlySet<string> | null;
  scheme: 'http' | 'https' | null;
  host: RegExp;
  port: number | null;
  /** Null: any path. */
  path: RegExp | null;
  withQuery: boolean;
}

export interface ExchangeTarget {
  method: string;
  url: URL;
}

export class PatternError extends Error {
  override name = 'PatternError';
}

function wildcard(text: string, flags: string): RegExp {
  const body = text
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, flags);
}

const PATTERN =
  /^(?:([A-Za-z*]+(?:,[A-Za-z]+)*)\s+)?(?:(https?):\/\/)?([^/:?\s]+)(?::(\d{1,5}|\*))?(\/\S*)?$/;
const MAX_PATTERN = 2000;

/** One settings entry as a pattern; throws PatternError for an entry that is not one. */
export function compilePattern(entry: unknown): BreakpointPattern {
  const spec =
    typeof entry === 'string' ? { pattern: entry } : (entry as Record<string, unknown> | null);
  if (!spec || typeof spec !== 'object' || typeof spec.pattern !== 'string') {
    throw new PatternError('a breakpoint is a pattern string or {"pattern": "...", "phase": ...}');
  }
  const source = spec.pattern.trim();
  if (source.length === 0 || source.length > MAX_PATTERN) {
    throw new PatternError(`a breakpoint pattern has 1 to ${MAX_PATTERN} characters`);
  }
  const phase = spec.phase ?? 'request';
  if (phase !== 'request' && phase !== 'response' && phase !== 'both') {
    throw new PatternError(`phase is request, response or both, not ${String(phase)}`);
  }
  const match = PATTERN.exec(source);
  if (!match) throw new PatternError(`not a breakpoint pattern: ${source}`);
  const [, methods, scheme, host, port, pathAndQuery] = match;
  const portNumber = port === undefined || port === '*' ? null : Number(port);
  if (portNumber !== null && (portNumber < 1 || portNumber > 65_535)) {
    throw new PatternError(`port out of range in ${source}`);
  }
  return {
    source,
    phases: new Set<Phase>(phase === 'both' ? ['request', 'response'] : [phase]),
    methods:
      methods === undefined || methods === '*'
        ? null
        : new Set(methods.split(',').map((method) => method.toUpperCase())),
    scheme: (scheme?.toLowerCase() as 'http' | 'https' | undefined) ?? null,
    host: wildcard((host as string).toLowerCase(), 'i'),
    port: portNumber,
    path: pathAndQuery === undefined ? null : wildcard(pathAndQuery, ''),
    withQuery: pathAndQuery?.includes('?') ?? false,
  };
}

export function matches(pattern: BreakpointPattern, phase: Phase, target: ExchangeTarget): boolean {
  if (!pattern.phases.has(phase)) return false;
  if (pattern.methods && !pattern.methods.has(target.method.toUpperCase())) return false;
  const { url } = target;
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  if (pattern.scheme && pattern.scheme !== scheme) return false;
  if (pattern.port !== null && pattern.port !== Number(url.port || (scheme === 'https' ? 443 : 80)))
    return false;
  if (!pattern.host.test(url.hostname.replace(/^\[|\]$/g, ''))) return false;
  if (!pattern.path) return true;
  return pattern.path.test(pattern.withQuery ? `${url.pathname}${url.search}` : url.pathname);
}

/** The usable patterns of a settings `breakpoints` value, and why the others were skipped. */
export function compileBreakpoints(value: unknown): {
  patterns: BreakpointPattern[];
  problems: string[];
} {
  const patterns: BreakpointPattern[] = [];
  const problems: string[] = [];
  if (value === null || value === undefined) return { patterns, problems };
  if (!Array.isArray(value)) return { patterns, problems: ['breakpoints is not a list'] };
  for (const entry of value) {
    if (entry && typeof entry === 'object' && (entry as { enabled?: unknown }).enabled === false)
      continue;
    try {
      patterns.push(compilePattern(entry));
    } catch (error) {
      if (!(error instanceof PatternError)) throw error;
      problems.push(error.message);
    }
  }
  return { patterns, problems };
}
