// Whether a signed, unexpired token still stands (docs/realtime.md "Protocol", Revocation): its jti
// is not revoked in public.api_tokens (API tokens and the tool server's OAuth tokens, whose grant
// revocation sets revoked_at) and its user is neither deleted, soft-deleted nor banned. Checked at
// connect, join and access_token, and again whenever the change feed shows a revocation, so a
// channel stops within one poll of the commit rather than at exp.
import type { Pool } from 'pg';
import type { Change } from './change.ts';
import type { Claims } from './tokens.ts';

export const TOKEN_REVOKED = 'Token has been revoked';
/** GoTrue's wording for the same states (user_not_found, user_banned). */
export const USER_NOT_FOUND = 'User not found';
export const USER_BANNED = 'User is banned';

/** Tables whose changes the service reads from its slot besides the publication's. */
export const CREDENTIAL_TABLES = ['public.api_tokens', 'auth.users'] as const;

/** What a committed change took away: one token, or every token of one user. */
export type Revocation = { jti: string; message: string } | { userId: string; message: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The user a token acts for, when its sub can name an auth.users row. */
function userOf(claims: Claims): string | null {
  return typeof claims.sub === 'string' && UUID.test(claims.sub) ? claims.sub.toLowerCase() : null;
}

function isBanned(bannedUntil: unknown, now = Date.now()): boolean {
  return typeof bannedUntil === 'string' && new Date(bannedUntil).getTime() > now;
}

/** The revocation a change to a credential table commits, if any (others answer null). */
export function revocationOf(change: Change): Revocation | null {
  const { schema, table } = change.table;
  if (schema === 'public' && table === 'api_tokens') {
    // revoked_at only ever goes from null to a time (private.keep_revocation_final).
    const jti = change.record?.jti;
    return change.type === 'UPDATE' && typeof jti === 'string' && change.record?.revoked_at
      ? { jti, message: TOKEN_REVOKED }
      : null;
  }
  if (schema === 'auth' && table === 'users') {
    const userId = String(change.keyValues[0] ?? '').toLowerCase();
    if (change.type === 'DELETE') return { userId, message: USER_NOT_FOUND };
    if (change.type !== 'UPDATE') return null;
    if (change.record?.deleted_at) return { userId, message: USER_NOT_FOUND };
    if (isBanned(change.record?.banned_until)) return { userId, message: USER_BANNED };
  }
  return null;
}

export function revokes(revocation: Revocation, claims: Claims): boolean {
  return 'jti' in revocation ? claims.jti === revocation.jti : userOf(claims) === revocation.userId;
}

export class Credentials {
  private tables: Promise<{ apiTokens: boolean; users: boolean }> | undefined;
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /** A stack without the data model (fixture projects) has no api_tokens; that check is skipped. */
  private existing() {
    this.tables ??= this.pool
      .query<{ api_tokens: boolean; users: boolean }>(
        `select to_regclass('public.api_tokens') is not null as api_tokens,
                to_regclass('auth.users') is not null as users`,
      )
      .then(({ rows }) => ({
        apiTokens: rows[0]?.api_tokens ?? false,
        users: rows[0]?.users ?? false,
      }))
      .catch((error: unknown) => {
        this.tables = undefined;
        throw error;
      });
    return this.tables;
  }

  /** For each token, why it no longer stands (null: it does); one round trip for all of them. */
  async refusals(tokens: Claims[]): Promise<(string | null)[]> {
    if (tokens.length === 0) return [];
    const { apiTokens, users } = await this.existing();
    const revoked = apiTokens
      ? 'exists (select 1 from public.api_tokens t where t.jti = c.jti and t.revoked_at is not null)'
      : 'false';
    const userState = users
      ? `left join auth.users u on u.id = c.sub::uuid`
      : 'left join (select null::uuid as id, null::timestamptz as deleted_at, null::timestamptz as banned_until) u on false';
    const { rows } = await this.pool.query<{ refusal: string | null }>(
      `select case
                when ${revoked} then $3
                when c.sub is not null and ${users ? 'u.id is null or u.deleted_at is not null' : 'false'} then $4
                when u.banned_until > now() then $5
              end as refusal
         from unnest($1::text[], $2::text[]) with ordinality as c(jti, sub, n)
         ${userState}
        order by c.n`,
      [
        tokens.map((claims) => (typeof claims.jti === 'string' ? claims.jti : null)),
        tokens.map(userOf),
        TOKEN_REVOKED,
        USER_NOT_FOUND,
        USER_BANNED,
      ],
    );
    return rows.map((row) => row.refusal);
  }
}
