// Confirmations of destructive farm calls (001 §4.1: "every destructive tool is confirm-gated";
// docs/farm.md "Gating"). The first call stores what would run and hands out a random token; the
// call runs only when the same user presents that token to the same tool with the same arguments
// before it expires, once. Only SHA-256 digests of the token and of the canonical arguments are
// stored, so the table reveals neither. Kept in Postgres so any instance of a rolling deploy
// honours a confirmation another handed out.
import { createHash, randomBytes } from 'node:crypto';
import type { ToolCall } from '../mcp/tool-definition.ts';
import type { Database } from '../store/database.ts';

export interface IssuedConfirmation {
  id: string;
  token: string;
  expiresAt: string;
}

export type ConfirmationRefusal =
  | 'unknown'
  | 'other_user'
  | 'other_tool'
  | 'other_arguments'
  | 'expired'
  | 'used';

export type Redemption = { ok: true; id: string } | { ok: false; refusal: ConfirmationRefusal };

/** What a refusal tells the caller: enough to act on, nothing about other users' rows. */
export const REFUSAL_MESSAGES: Record<ConfirmationRefusal, string> = {
  unknown: 'This confirmation is not valid. Call the tool again without it to get a new one.',
  other_user: 'This confirmation is not valid. Call the tool again without it to get a new one.',
  other_tool: 'This confirmation was issued for another tool.',
  other_arguments:
    'This confirmation was issued for other arguments; it confirms only the exact call it was ' +
    'issued for. Call again without it to confirm these arguments.',
  expired: 'This confirmation has expired. Call the tool again without it to get a new one.',
  used: 'This confirmation was already used; each confirms one run.',
};

/**
 * Text a confirmation shows a person (a command, a script, a URL) with every character that could
 * make it read as something else made visible: line breaks and other controls, bidirectional
 * overrides, zero-width and other format characters (Unicode TR36 §2, CVE-2021-42574) become
 * `\n`, `\t` or `\u{…}`. A command padded with newlines after a harmless first line, or reversed
 * by U+202E, would otherwise be confirmed as the part that was shown.
 */
export function shownText(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\\]/gu, (char) => {
    if (char === '\\') return '\\\\';
    if (char === '\n') return '\\n';
    if (char === '\t') return '\\t';
    return `\\u{${(char.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`;
  });
}

/**
 * The farm host a confirmation names: this tool server's `farm.hostName`, the name its devices are
 * attached under (farm_attached_devices.farm_host), not the machine's own hostname, which a
 * container or a renamed host would show instead.
 */
export function farmHostOf(call: ToolCall): string {
  return call.farm?.config.hostName ?? 'this host';
}

/** JSON with object keys sorted at every level, so equal arguments hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

interface ConfirmationRow {
  id: string;
  user_id: string;
  tool: string;
  arguments_sha256: Buffer;
  expired: boolean;
  used: boolean;
}

export class FarmConfirmations {
  private readonly db: Database;
  private readonly ttlSeconds: number;

  constructor(db: Database, ttlSeconds: number) {
    this.db = db;
    this.ttlSeconds = ttlSeconds;
  }

  async issue(
    userId: string,
    tool: string,
    args: unknown,
    wouldRun: string,
  ): Promise<IssuedConfirmation> {
    const token = `fc_${randomBytes(32).toString('base64url')}`;
    const rows = await this.db.query<{ id: string; expires_at: Date }>(
      `insert into private.farm_confirmations
         (token_sha256, user_id, tool, arguments_sha256, would_run, expires_at)
       values ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
       returning id, expires_at`,
      [sha256(token), userId, tool, sha256(canonicalJson(args)), wouldRun, this.ttlSeconds],
    );
    const row = rows[0] as { id: string; expires_at: Date };
    return { id: row.id, token, expiresAt: row.expires_at.toISOString() };
  }

  /** Spends the confirmation when it was issued for exactly this call; says why not otherwise. */
  async redeem(token: string, userId: string, tool: string, args: unknown): Promise<Redemption> {
    const tokenHash = sha256(token);
    const rows = await this.db.query<ConfirmationRow>(
      `select id, user_id, tool, arguments_sha256, expires_at <= now() as expired,
              used_at is not null as used
         from private.farm_confirmations where token_sha256 = $1`,
      [tokenHash],
    );
    const row = rows[0];
    if (!row) return { ok: false, refusal: 'unknown' };
    if (row.user_id !== userId) return { ok: false, refusal: 'other_user' };
    if (row.tool !== tool) return { ok: false, refusal: 'other_tool' };
    if (!row.arguments_sha256.equals(sha256(canonicalJson(args)))) {
      return { ok: false, refusal: 'other_arguments' };
    }
    if (row.used) return { ok: false, refusal: 'used' };
    if (row.expired) return { ok: false, refusal: 'expired' };
    // The conditional update is the one-time guard: two concurrent redemptions, one winner.
    const spent = await this.db.query<{ id: string }>(
      `update private.farm_confirmations set used_at = now()
        where id = $1 and used_at is null and expires_at > now() returning id`,
      [row.id],
    );
    return spent.length > 0 ? { ok: true, id: row.id } : { ok: false, refusal: 'used' };
  }
}
