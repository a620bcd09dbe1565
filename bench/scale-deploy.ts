// Deploy-time costs at the last size of bench:scale: what a migration adding a column or an index
// to `entries` costs at that many captures, each form timed, and whether it blocks writes.
import type pg from 'pg';

async function timed(db: pg.Client, sql: string): Promise<number> {
  const started = performance.now();
  await db.query(sql);
  return performance.now() - started;
}

/**
 * Times, on `entries` as it stands: a nullable column, a column with a constant default (both
 * catalog-only since Postgres 11), with `rewrite` a column with a volatile default (rewrites every
 * partition under an ACCESS EXCLUSIVE lock), and a new index three ways: one CREATE INDEX on the parent
 * (writes blocked throughout); in one migration, an index on the parent only and then each
 * partition's built and attached, this week's last (docs/scale.md); and from a script, each
 * partition's built concurrently. Undoes each change after timing it. Returns markdown rows.
 */
export async function measureDeployCosts(
  db: pg.Client,
  options: { rewrite: boolean },
): Promise<string[]> {
  const rows: string[] = [];
  const row = (change: string, ms: number, blocks: string) =>
    rows.push(`| ${change} | ${(ms / 1000).toFixed(ms < 1000 ? 3 : 1)} | ${blocks} |`);

  row(
    'add a nullable column',
    await timed(db, 'alter table public.entries add column bench_note text'),
    'briefly (catalog only)',
  );
  await db.query('alter table public.entries drop column bench_note');
  row(
    "add a column with a constant default ('x')",
    await timed(db, "alter table public.entries add column bench_flag text not null default 'x'"),
    'briefly (catalog only)',
  );
  await db.query('alter table public.entries drop column bench_flag');
  if (options.rewrite) {
    row(
      'add a column with a volatile default (clock_timestamp())',
      await timed(
        db,
        'alter table public.entries add column bench_at timestamptz default clock_timestamp()',
      ),
      'reads and writes, throughout (rewrite)',
    );
    await db.query('alter table public.entries drop column bench_at');
  }

  row(
    'create index on the parent (one statement)',
    await timed(db, 'create index bench_kind_idx on public.entries (kind)'),
    'writes, throughout',
  );
  await db.query('drop index public.bench_kind_idx');

  // Oldest first, so the week that takes captures now is built last: in one transaction every
  // partition's lock is held to the commit, and only that last one receives writes.
  const { rows: partitions } = await db.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.entries'::regclass order by 1`,
  );
  const current = await currentPartition(db);
  const ordered = [
    ...partitions.filter(({ name }) => name !== current),
    ...partitions.filter(({ name }) => name === current),
  ];
  const perPartition = async (concurrently: boolean) => {
    let total = await timed(db, 'create index bench_kind_idx on only public.entries (kind)');
    let currentWeek = 0;
    for (const { name } of ordered) {
      const build = await timed(
        db,
        `create index ${concurrently ? 'concurrently ' : ''}bench_kind_${name}_idx on private.${name} (kind)`,
      );
      const attach = await timed(
        db,
        `alter index public.bench_kind_idx attach partition private.bench_kind_${name}_idx`,
      );
      total += build + attach;
      if (name === current) currentWeek = build + attach;
    }
    return { total, currentWeek };
  };

  await db.query('begin');
  const inOneTransaction = await perPartition(false);
  const commitStarted = performance.now();
  await db.query('commit');
  const commit = performance.now() - commitStarted;
  row(
    `create index in one migration: on only the parent, then each of ${ordered.length} partitions, this week's last`,
    inOneTransaction.total + commit,
    `writes to this week's partition for ${((inOneTransaction.currentWeek + commit) / 1000).toFixed(1)} s; older weeks take none`,
  );
  await db.query('drop index public.bench_kind_idx');

  const concurrent = await perPartition(true);
  row(
    `create index from a script: on only the parent, then each partition concurrently, attached`,
    concurrent.total,
    'never (each partition briefly, at attach)',
  );
  await db.query('drop index public.bench_kind_idx');
  return rows;
}

/** The partition that holds captures stamped now (weekly, named by its Monday in UTC). */
async function currentPartition(db: pg.Client): Promise<string | undefined> {
  const { rows } = await db.query<{ name: string }>(
    `select 'entries_w' || to_char(date_trunc('week', now() at time zone 'UTC'), 'YYYYMMDD') as name`,
  );
  return rows[0]?.name;
}
