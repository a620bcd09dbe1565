// Redaction of captured traffic, shared by the MCP tool server (Node) and the assistant (Deno):
// 001 §4.3, "secrets met in captured traffic (tokens, cookies, keys) are emitted as
// placeholders, never echoed". Web standards only; docs/redaction.md describes what is caught.
import { planCapture } from './redaction/capture.ts';
import {
  type FingerprintKey,
  fingerprintSecrets,
  importFingerprintKey,
} from './redaction/fingerprint.ts';
import {
  type Context,
  createContext,
  createLookup,
  type Limits,
  type Lookup,
} from './redaction/plan.ts';
import { planString } from './redaction/text.ts';

export { MIN_KEY_BYTES } from './redaction/fingerprint.ts';
export { isPlaceholderOnly, REDACTION_KINDS, type RedactionKind } from './redaction/kinds.ts';
export { classifyHeaderName, classifyName } from './redaction/secret-names.ts';

export interface RedactionOptions {
  /**
   * HMAC key (at least 16 bytes, from a secret the readers of the output never see): a
   * placeholder's fingerprint is stable per value and key, and guessing a short secret from it
   * needs the key.
   */
  key: Uint8Array;
  /** Characters scanned in one string; the unscanned tail is replaced by a marker. */
  maxStringChars?: number;
  /** Characters scanned in one call; strings past it are replaced by a marker. */
  maxTotalChars?: number;
}

/** 2 Mi characters per string (twice the proxy's default body cap), 32 Mi per call. */
export const DEFAULT_LIMITS: Readonly<Limits> = {
  maxStringChars: 2 * 1024 * 1024,
  maxTotalChars: 32 * 1024 * 1024,
};

export interface Redactor {
  redactCapture(payload: unknown): Promise<unknown>;
  redactText(text: string): Promise<string>;
}

/** A redactor that imports its key once, for callers that redact many captures. */
export function createRedactor(options: RedactionOptions): Redactor {
  const limits = limitsOf(options);
  let key: Promise<FingerprintKey> | undefined;
  const run = async <T>(plan: (context: Context) => (lookup: Lookup) => T): Promise<T> => {
    key ??= importFingerprintKey(options.key);
    const cryptoKey = await key;
    const context = createContext(limits);
    const render = plan(context);
    const prints = await fingerprintSecrets(context.secrets, cryptoKey);
    return render(createLookup(prints));
  };
  return {
    redactCapture: (payload) => run((context) => planCapture(payload, context)),
    redactText: (text) =>
      run((context) => {
        const plan = planString(textOf(text), 'auto', context, 0);
        return (lookup) => plan.render(lookup);
      }),
  };
}

/** A deep copy of a capture payload (entries.payload) with every secret replaced by a placeholder. */
export function redactCapture(payload: unknown, options: RedactionOptions): Promise<unknown> {
  return createRedactor(options).redactCapture(payload);
}

/** Free text (a body, a header value, a URL, a log line) with secrets replaced. */
export function redactText(text: string, options: RedactionOptions): Promise<string> {
  return createRedactor(options).redactText(text);
}

function limitsOf(options: RedactionOptions): Limits {
  const positive = (value: number | undefined, fallback: number) =>
    typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
  return {
    maxStringChars: positive(options.maxStringChars, DEFAULT_LIMITS.maxStringChars),
    maxTotalChars: positive(options.maxTotalChars, DEFAULT_LIMITS.maxTotalChars),
  };
}

/** Callers typed `string` may still pass anything at runtime: never throw on it. */
function textOf(text: unknown): string {
  if (typeof text === 'string') return text;
  if (text === null || text === undefined) return '';
  try {
    return String(text);
  } catch {
    return '';
  }
}
