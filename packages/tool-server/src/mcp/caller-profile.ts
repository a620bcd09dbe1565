// Who is calling a tool: the verified token's claims and what whoami() says the caller holds
// (roles, capabilities), read as the caller so SQL stays the source of authorization truth.
// Cached per token for a short while: tools/list and tools/call of one session are many requests.
import type pg from 'pg';
import type { Database } from '../store/database.ts';

export interface CallerProfile {
  userId: string;
  email: string | null;
  isAdmin: boolean;
  /** `section:action` strings, as has_capability() grants them (edit implies view). */
  capabilities: ReadonlySet<string>;
  /** The verified access token's claims, replayed as request.jwt.claims for every query. */
  claims: Record<string, unknown>;
}

const CACHE_MS = 30_000;
const CACHE_LIMIT = 10_000;

interface WhoamiRow {
  whoami: { user_id: string; email: string | null; is_admin: boolean; capabilities: string[] };
}

/** The caller as whoami() answers now, read on a client already acting as them. */
export async function readProfile(
  client: pg.PoolClient,
  claims: Record<string, unknown>,
): Promise<CallerProfile> {
  const { rows } = await client.query<WhoamiRow>('select public.whoami() as whoami');
  const row = rows[0]?.whoami;
  if (!row) throw new Error('whoami() answered nothing');
  return {
    userId: row.user_id,
    email: row.email,
    isAdmin: row.is_admin,
    capabilities: new Set(row.capabilities),
    claims,
  };
}

export class CallerProfiles {
  private readonly db: Database;
  private readonly cache = new Map<string, { profile: CallerProfile; until: number }>();

  constructor(db: Database) {
    this.db = db;
  }

  async profileOf(claims: Record<string, unknown>): Promise<CallerProfile> {
    const key = String(claims.jti ?? '');
    const cached = this.cache.get(key);
    if (cached && cached.until > Date.now()) return cached.profile;
    const profile = await this.db.asCaller(claims, (client) => readProfile(client, claims));
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(key, { profile, until: Date.now() + CACHE_MS });
    return profile;
  }
}
