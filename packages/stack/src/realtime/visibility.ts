// Which changed rows a subscriber may see, decided by the table's own RLS: the existence check
// on the primary key runs as the subscriber, with role and request.jwt.claims set as PostgREST
// sets them (Realtime's apply_rls). One query per identity and table covers a whole batch.
import type { Pool } from 'pg';
import { quoteIdent, type TableRef } from './catalog.ts';
import type { ChangeColumn } from './wal-stream.ts';

export interface Identity {
  role: string;
  claims: Record<string, unknown>;
}

/** One identity's question: which of these keys of `table` may it select? */
export interface VisibilityQuestion {
  identity: Identity;
  table: TableRef;
  primaryKey: ChangeColumn[];
  /** Primary-key values as text, in primaryKey order. */
  keys: string[][];
}

/** Questions answered per round trip: each is its own transaction in one simple query. */
const QUESTIONS_PER_ROUND_TRIP = 50;

function transactionFor(question: VisibilityQuestion, literal: (value: string) => string): string {
  const { identity, table, primaryKey, keys } = question;
  const aliases = primaryKey.map((_, index) => `k${index}`);
  const arrays = primaryKey.map(
    (_, index) => `array[${keys.map((key) => literal(key[index] ?? '')).join(', ')}]::text[]`,
  );
  const conditions = primaryKey
    .map((column, index) => `t.${quoteIdent(column.name)} = u.${aliases[index]}::${column.sqlType}`)
    .join(' and ');
  return `begin read only;
    select set_config('role', ${literal(identity.role)}, true),
           set_config('request.jwt.claims', ${literal(JSON.stringify(identity.claims))}, true),
           set_config('statement_timeout', '5s', true);
    select u.ord::int as ord
    from unnest(${arrays.join(', ')}) with ordinality as u (${aliases.join(', ')}, ord)
    where exists (select 1 from ${quoteIdent(table.schema)}.${quoteIdent(table.table)} t
                  where ${conditions});
    commit;`;
}

/**
 * For each question, the indexes into its `keys` that its identity can select right now. Many
 * identities share a round trip (simple query protocol, every value a literal escaped by the
 * driver); a failure anywhere in a round trip hides all its rows (fail closed) and is rethrown
 * to the caller through `onError`.
 */
export async function answerVisibility(
  pool: Pool,
  questions: VisibilityQuestion[],
  onError: (error: unknown) => void,
): Promise<Array<Set<number>>> {
  const answers = questions.map(() => new Set<number>());
  for (let start = 0; start < questions.length; start += QUESTIONS_PER_ROUND_TRIP) {
    const chunk = questions.slice(start, start + QUESTIONS_PER_ROUND_TRIP);
    let failure: unknown;
    const client = await pool.connect();
    try {
      const literal = (value: string) => client.escapeLiteral(value);
      const results = (await client.query(
        chunk.map((question) => transactionFor(question, literal)).join('\n'),
      )) as unknown as Array<{ rows: Array<{ ord: number }> }>;
      chunk.forEach((_, index) => {
        // Four results per transaction: begin, set_config, the check, commit.
        const rows = results[index * 4 + 2]?.rows ?? [];
        answers[start + index] = new Set(rows.map((row) => row.ord - 1));
      });
    } catch (error) {
      failure = error;
      await client.query('rollback').catch(() => undefined);
    } finally {
      client.release();
    }
    if (failure === undefined) continue;
    if (chunk.length === 1) {
      onError(failure);
      continue;
    }
    // One question failed (a role without SELECT, a timeout): ask the rest one by one.
    for (const [index, question] of chunk.entries()) {
      const [answer] = await answerVisibility(pool, [question], onError);
      answers[start + index] = answer ?? new Set();
    }
  }
  return answers;
}
