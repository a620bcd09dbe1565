// Who a farm call acts for and how it reads and writes as them: all the farm needs of a tool
// call (the tool server's ToolCall is one), so the farm depends on no part of the tool server.
import type pg from 'pg';

/** The caller as the farm records and binds them: the verified token's subject and claims. */
export interface FarmCaller {
  userId: string;
  email: string | null;
  /** The verified access token's claims (`jti`, `client_id`, `sub`), replayed for every query. */
  claims: Record<string, unknown>;
}

export interface ActingCaller {
  caller: FarmCaller;
  /** Runs `work` in one transaction as the caller (RLS and has_capability apply). */
  asCaller<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}
