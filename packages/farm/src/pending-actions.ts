// Pending actions: destructive farm calls waiting for a person (001 §4.1 "every destructive tool
// is confirm-gated"; docs/farm.md "Gating"). The first call stores what would run, bound to the
// user, the tool, the exact arguments and the OAuth grant of the client that asked (a first-party
// token, which has no grant, binds its own jti). The owner decides it from a dashboard session
// (RLS on public.farm_pending_actions refuses every other token) or answers an MCP elicitation in
// the client; the call then runs once, for that grant, before it expires. Kept in Postgres so any
// instance of a rolling deploy honours what another asked.
import { createHash } from 'node:crypto';
import type { FarmCaller } from './acting-caller.ts';
import { canonicalJson, shownText } from './confirmations.ts';
import type { FarmDatabase } from './farm-database.ts';

export interface PendingAction {
  id: string;
  wouldRun: string;
  expiresAt: string;
  clientName: string;
}

/** Why an action does not run now; 'pending' is no refusal: a person has not decided yet. */
export type ActionRefusal =
  | 'unknown'
  | 'other_user'
  | 'other_client'
  | 'other_tool'
  | 'other_arguments'
  | 'expired'
  | 'used'
  | 'denied';

export type Redemption =
  | { kind: 'run'; id: string; decidedVia: string; decidedAt: string }
  | { kind: 'pending'; action: PendingAction }
  | { kind: 'refused'; refusal: ActionRefusal };

/** What a refusal tells the caller: enough to act on, nothing about other users' or clients'. */
export const REFUSAL_MESSAGES: Record<ActionRefusal, string> = {
  unknown: 'This pending action is not valid. Call the tool again without it to ask again.',
  other_user: 'This pending action is not valid. Call the tool again without it to ask again.',
  other_client: 'This pending action is not valid. Call the tool again without it to ask again.',
  other_tool: 'This pending action was asked for another tool.',
  other_arguments:
    'This pending action was asked for other arguments; it runs only the exact call a person ' +
    'approved. Call again without it to ask for these arguments.',
  expired: 'This pending action has expired. Call the tool again without it to ask again.',
  used: 'This pending action already ran; each approval runs one call.',
  denied: 'A person denied this call; nothing ran.',
};

/** The longest client name a person is shown (registration allows 200 characters). */
const CLIENT_NAME_LIMIT = 200;

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

interface Binding {
  client_id: string;
  client_name: string | null;
  grant_id: string | null;
}

interface ActionRow {
  id: string;
  owner_user_id: string;
  tool: string;
  arguments_sha256: Buffer;
  would_run: string;
  client_name: string;
  same_client: boolean;
  expires_at: Date;
  expired: boolean;
  decision: 'approved' | 'denied' | null;
  decided_via: string | null;
  decided_at: Date | null;
  used: boolean;
}

function pendingActionOf(row: {
  id: string;
  would_run: string;
  expires_at: Date;
  client_name: string;
}): PendingAction {
  return {
    id: row.id,
    wouldRun: row.would_run,
    expiresAt: row.expires_at.toISOString(),
    clientName: row.client_name,
  };
}

const jtiOf = (caller: FarmCaller) => String(caller.claims.jti ?? '');

export class FarmPendingActions {
  private readonly db: FarmDatabase;
  private readonly ttlSeconds: number;

  constructor(db: FarmDatabase, ttlSeconds: number) {
    this.db = db;
    this.ttlSeconds = ttlSeconds;
  }

  /** Records a call awaiting a person, bound to the grant (or first-party token) that asked. */
  async ask(
    caller: FarmCaller,
    tool: string,
    args: unknown,
    wouldRun: string,
  ): Promise<PendingAction> {
    const jti = jtiOf(caller);
    // The MCP endpoint admits only tokens recorded in api_tokens (bearer-auth.ts), so the row is
    // there; its grant comes from the tool server's own record of the token.
    const bindings = await this.db.query<Binding>(
      `select t.client_id, c.client_name, a.grant_id
         from public.api_tokens t
         left join private.oauth_access_tokens a on a.jti = t.jti
         left join private.oauth_clients c on c.client_id = t.client_id
        where t.jti = $1 and t.user_id = $2`,
      [jti, caller.userId],
    );
    const binding = bindings[0];
    if (!binding) throw new Error('the access token of a farm call has no api_tokens row');
    const clientId = binding.client_id ?? '';
    // The client named itself at registration: shown as text, its control and bidi characters
    // made visible as in what would run (confirmations.ts), next to its client_id.
    const clientName = shownText(binding.client_name ?? clientId).slice(0, CLIENT_NAME_LIMIT);
    const rows = await this.db.query<{ id: string; expires_at: Date }>(
      `insert into public.farm_pending_actions
         (owner_user_id, tool, would_run, arguments_sha256, client_id, client_name, grant_id,
          token_jti, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))
       returning id, expires_at`,
      [
        caller.userId,
        tool,
        wouldRun,
        sha256(canonicalJson(args)),
        clientId,
        clientName,
        binding.grant_id,
        binding.grant_id === null ? jti : null,
        this.ttlSeconds,
      ],
    );
    const row = rows[0] as { id: string; expires_at: Date };
    return pendingActionOf({ ...row, would_run: wouldRun, client_name: clientName });
  }

  /**
   * The person's answer to an elicitation (the MCP client asked them): recorded as the decision
   * of a pending action of this caller and grant that nobody decided yet. A decision already
   * made (in the dashboard) stands; redeem() then judges the call.
   */
  async decideByElicitation(
    id: string,
    caller: FarmCaller,
    call: { tool: string; args: unknown },
    decision: 'approved' | 'denied',
  ): Promise<void> {
    // Only the action the person was shown: this tool and these arguments, as asked.
    await this.db.query(
      `update public.farm_pending_actions p
          set decision = $3, decided_via = 'elicitation'
         from (select a.grant_id from public.api_tokens t
                 left join private.oauth_access_tokens a on a.jti = t.jti
                where t.jti = $4) as asker
        where p.id = $1 and p.owner_user_id = $2 and p.decision is null and p.used_at is null
          and p.expires_at > now() and p.tool = $5 and p.arguments_sha256 = $6
          and (case when p.grant_id is not null then p.grant_id = asker.grant_id
                    else p.token_jti = $4 end)`,
      [id, caller.userId, decision, jtiOf(caller), call.tool, sha256(canonicalJson(call.args))],
    );
  }

  /**
   * Spends the action when a person approved exactly this call for this grant; answers it as
   * still pending when nobody decided yet, or says why it will not run.
   */
  async redeem(id: string, caller: FarmCaller, tool: string, args: unknown): Promise<Redemption> {
    const rows = await this.db.query<ActionRow>(
      `select p.id, p.owner_user_id, p.tool, p.arguments_sha256, p.would_run, p.client_name,
              coalesce(case when p.grant_id is not null then p.grant_id = a.grant_id
                            else p.token_jti = $2 end, false) as same_client,
              p.expires_at, p.expires_at <= now() as expired, p.decision, p.decided_via,
              p.decided_at, p.used_at is not null as used
         from public.farm_pending_actions p
         left join private.oauth_access_tokens a on a.jti = $2
        where p.id = $1`,
      [id, jtiOf(caller)],
    );
    const row = rows[0];
    const refused = (refusal: ActionRefusal): Redemption => ({ kind: 'refused', refusal });
    if (!row) return refused('unknown');
    if (row.owner_user_id !== caller.userId) return refused('other_user');
    // Another OAuth client of the same user (001 §4.1): the approval was for the one that asked.
    if (!row.same_client) return refused('other_client');
    if (row.tool !== tool) return refused('other_tool');
    if (!row.arguments_sha256.equals(sha256(canonicalJson(args)))) {
      return refused('other_arguments');
    }
    if (row.used) return refused('used');
    if (row.decision === 'denied') return refused('denied');
    if (row.expired) return refused('expired');
    if (row.decision === null) return { kind: 'pending', action: pendingActionOf(row) };
    // The conditional update is the one-time guard: two concurrent redemptions, one winner.
    const spent = await this.db.query<{ id: string }>(
      `update public.farm_pending_actions set used_at = now()
        where id = $1 and decision = 'approved' and used_at is null and expires_at > now()
        returning id`,
      [row.id],
    );
    if (spent.length === 0) return refused('used');
    return {
      kind: 'run',
      id: row.id,
      decidedVia: row.decided_via ?? 'dashboard',
      decidedAt: (row.decided_at ?? new Date()).toISOString(),
    };
  }
}
