// The closed set of redaction kinds and the placeholder that replaces a secret (001 §4.3,
// docs/redaction.md): `[redacted:<kind>:<8 hex of HMAC-SHA256(key, secret)>]`. The kind says
// what was removed, the fingerprint lets a reader match equal secrets without seeing them.

/** Every kind a placeholder may name; docs/redaction.md says what each covers. */
export const REDACTION_KINDS = [
  'authorization',
  'basic-auth',
  'bearer',
  'cookie',
  'set-cookie',
  'session',
  'jwt',
  'password',
  'token',
  'api-key',
  'secret',
  'private-key',
  'signature',
  'card',
  'connection-string',
  'aws-key',
  'aws-secret-key',
  'github-token',
  'gitlab-token',
  'stripe-key',
  'slack-token',
  'google-api-key',
  'openai-key',
  'anthropic-key',
  'supabase-key',
  'npm-token',
] as const;

export type RedactionKind = (typeof REDACTION_KINDS)[number];

const PLACEHOLDER_SOURCE = String.raw`\[redacted:[a-z0-9-]{1,32}:[0-9a-f]{8}\]`;

/** Finds placeholders in a text (global: reset `lastIndex` before use). */
export const PLACEHOLDER_PATTERN: RegExp = new RegExp(PLACEHOLDER_SOURCE, 'g');

const ONLY_PLACEHOLDERS = new RegExp(`^(?:\\s*${PLACEHOLDER_SOURCE})+\\s*$`);

export function formatPlaceholder(kind: RedactionKind, fingerprint: string): string {
  return `[redacted:${kind}:${fingerprint}]`;
}

/** True for a value that is already nothing but placeholders: redacting it again changes nothing. */
export function isPlaceholderOnly(value: string): boolean {
  return value.length < 4096 && ONLY_PLACEHOLDERS.test(value);
}

/**
 * Where text was left out: a string longer than the scan limit keeps its scanned head and ends
 * with this marker instead of its unscanned tail (never echoed, since nobody looked at it).
 */
export function formatUnscanned(characters: number): string {
  return `[redaction-limit: ${characters} characters not scanned]`;
}

/** Stands for a value the redactor could not process (`what`): withheld rather than echoed. */
export function formatWithheld(what: string): string {
  return `[redaction-failed: ${what} withheld]`;
}
