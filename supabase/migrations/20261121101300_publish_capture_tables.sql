-- Realtime (001 §4.2 rule 5): captures, devices and breakpoints are pushed, not polled. A
-- partitioned table publishes its partitions' changes, including partitions created later.
alter publication supabase_realtime add table public.entries, public.devices, public.device_status,
  public.breakpoint_events;
