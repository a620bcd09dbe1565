// The durable record of every farm call (docs/farm.md "The audit"): who (user, token, client),
// which tool, what happened (asked, refused, ran, failed), the redacted arguments, the outcome and
// how long it took. A run is recorded before it starts and completed after, so a run that never
// finishes (a crash, a deploy) still shows; when the record cannot be written, nothing runs.
import { createHash } from 'node:crypto';
import type { FarmCaller } from './acting-caller.ts';
import { redactCommandCredentials } from './command-credentials.ts';
import type { FarmDatabase } from './farm-database.ts';

export type AuditEvent = 'asked' | 'refused' | 'ran' | 'failed';

export interface AuditEntry {
  caller: FarmCaller;
  tool: string;
  event: AuditEvent;
  /** Already redacted. */
  arguments: unknown;
  outcome: Record<string, unknown>;
  durationMs?: number;
  confirmationId?: string;
}

/** Longer argument strings (an uploaded APK in base64, a long script) are logged by digest. */
const LOGGED_STRING_LIMIT = 2_048;

/**
 * Arguments as the log keeps them: a string over the limit, or a top-level argument the tool
 * names as digested (text typed into a page may be a password), becomes its length and SHA-256,
 * so the record still identifies exactly what ran without keeping the text itself. A string
 * carrying a credential it recognises (`curl -u user:password`, `PGPASSWORD=…`, URL user
 * information; command-credentials.ts) is kept as a redacted preview beside the length and
 * SHA-256 of the exact text, which an admin holding a command can match.
 */
export function argumentsForLog(value: unknown, digested: readonly string[] = []): unknown {
  if (typeof value === 'string' && value.length > LOGGED_STRING_LIMIT) {
    return { omitted: 'long string', length: value.length, sha256: sha256Hex(value) };
  }
  if (typeof value === 'string') {
    const preview = redactCommandCredentials(value);
    if (preview === value) return value;
    return {
      omitted: 'credentials redacted',
      preview,
      length: value.length,
      sha256: sha256Hex(value),
    };
  }
  if (digested.length > 0 && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [
        key,
        digested.includes(key) && typeof item === 'string'
          ? { omitted: 'kept as a digest', length: item.length, sha256: sha256Hex(item) }
          : argumentsForLog(item),
      ]),
    );
  }
  if (Array.isArray(value)) return value.map((item) => argumentsForLog(item));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [
        key,
        argumentsForLog(item),
      ]),
    );
  }
  return value;
}

/**
 * Arguments as logged, in all: the raw arguments are logged as sent, unknown members included, so
 * a call of many short strings (each under the string limit) would otherwise put megabytes into
 * every row of a table that is never swept.
 */
const LOGGED_ARGUMENTS_LIMIT = 16 * 1024;

/** The logged arguments, or their length and SHA-256 when their JSON runs over the limit. */
export function boundedForLog(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  if (json.length <= LOGGED_ARGUMENTS_LIMIT) return value;
  return { omitted: 'large arguments', length: json.length, sha256: sha256Hex(json) };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The result fields the audit keeps as they are: what happened, never what a command printed or
 * a page said (docs/farm.md "The audit"). Shell: exit code, signal, termination, truncation,
 * duration, network. Browser: the session and action, truncation, closed. App family: device,
 * package, version, the device's answer. Every farm tool: the farm device it used. A field
 * outside this list (stdout, stderr, read text, an evaluate result, a page's URL and title, a
 * package list) is kept only as the length and SHA-256 of its text; nothing else of it is.
 */
const OUTCOME_FIELDS = new Set([
  'exit_code',
  'signal',
  'terminated',
  'stdout_truncated',
  'stderr_truncated',
  'duration_ms',
  'network',
  'device_uuid',
  'session_id',
  'action',
  'truncated',
  'closed',
  'device_name',
  'serial',
  'package',
  'version_code',
  'version_name',
  'outcome',
  'replace',
  'filter',
  'captured_under_device_uuid',
]);

/** The longest allow-listed string kept as is (names, codes, uuids); longer ones by digest. */
const OUTCOME_STRING_LIMIT = 200;

/** A result as the audit keeps it: allow-listed scalars, everything else by length and digest. */
export function outcomeSummary(output: unknown): Record<string, unknown> {
  if (output === null || typeof output !== 'object') return {};
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(output as Record<string, unknown>)) {
    if (value === undefined) continue;
    const scalar =
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      value === null ||
      (typeof value === 'string' && value.length <= OUTCOME_STRING_LIMIT);
    if (OUTCOME_FIELDS.has(key) && scalar) {
      summary[key] = value;
      continue;
    }
    const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
    summary[key] = { omitted: 'kept as a digest', length: text.length, sha256: sha256Hex(text) };
  }
  return summary;
}

export class FarmAudit {
  private readonly db: FarmDatabase;

  constructor(db: FarmDatabase) {
    this.db = db;
  }

  /** Writes one row and answers its id. */
  async record(entry: AuditEntry): Promise<string> {
    const claims = entry.caller.claims;
    const rows = await this.db.query<{ id: string }>(
      `insert into public.farm_audit (user_id, user_email, token_jti, client_id, tool, event,
         arguments, outcome, duration_ms, confirmation_id)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning id`,
      [
        entry.caller.userId,
        entry.caller.email,
        typeof claims.jti === 'string' ? claims.jti : null,
        typeof claims.client_id === 'string' ? claims.client_id : null,
        entry.tool,
        entry.event,
        JSON.stringify(entry.arguments ?? {}),
        JSON.stringify(entry.outcome),
        entry.durationMs === undefined ? null : Math.round(entry.durationMs),
        entry.confirmationId ?? null,
      ],
    );
    return String(rows[0]?.id);
  }

  /** Completes a run recorded by record(): its event, outcome and duration. */
  async complete(
    id: string,
    event: 'ran' | 'failed',
    outcome: Record<string, unknown>,
    durationMs: number,
  ): Promise<void> {
    await this.db.query(
      'update public.farm_audit set event = $2, outcome = $3, duration_ms = $4 where id = $1',
      [id, event, JSON.stringify(outcome), Math.round(durationMs)],
    );
  }
}
