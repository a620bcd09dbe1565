-- Weekly entries partitions: create this week and four ahead now, and keep it so with a daily
-- pg_cron job (which also applies the optional retention, see drop_expired_entries_partitions).
select private.maintain_entries_partitions();
select cron.schedule('entries-partitions', '17 3 * * *',
  'select private.maintain_entries_partitions()');
