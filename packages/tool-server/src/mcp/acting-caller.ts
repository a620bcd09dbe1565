// Who a tool call acts for and how it reads and writes as them: the part of a call (ToolCall,
// tool-definition.ts) that the farm's parts need, kept apart so the farm does not depend on what
// a tool is.
import type pg from 'pg';
import type { PoolLane } from '../store/pool-slots.ts';
import type { CallerProfile } from './caller-profile.ts';

export interface ActingCaller {
  caller: CallerProfile;
  /**
   * Runs `work` in one transaction as the caller (RLS and has_capability apply), its connection
   * taken in `lane` of the tool pool (standard unless given).
   */
  asCaller<T>(work: (client: pg.PoolClient) => Promise<T>, lane?: PoolLane): Promise<T>;
}
