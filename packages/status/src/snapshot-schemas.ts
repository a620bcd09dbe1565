// The two feed snapshots of spec 002 §2.1 and §2.2 as zod schemas: one definition shared by the
// status service, the tests and later the tool server and dashboard, so a field cannot drift.
import { z } from 'zod';

const count = z.number().int().nonnegative();

/** 002 §2.1, written by get_stats() / the service-stats job. */
export const StatsSnapshot = z.object({
  total_devices: count,
  online_devices: count,
  total_entries: count,
  entries_1h: count,
  entries_24h: count,
  requests_per_sec: z.number().nonnegative(),
  status_class_mix: z.partialRecord(z.enum(['1', '2', '3', '4', '5']), count),
  source_mix: z.record(z.string(), count),
  connection_type_mix: z.record(z.string(), count),
  top_domains: z.array(z.object({ host: z.string(), count })),
  top_devices: z.array(z.object({ device_uuid: z.uuid(), name: z.string(), count })),
  generated_at: z.iso.datetime(),
});
export type StatsSnapshot = z.infer<typeof StatsSnapshot>;

export const ComponentStatus = z.object({
  key: z.string().min(1),
  label: z.string().min(1),
  probe: z.object({
    up: z.boolean(),
    httpStatus: z.number().int().nonnegative(),
    latencyMs: z.number().nonnegative(),
  }),
  unitState: z.string().min(1),
});
export type ComponentStatus = z.infer<typeof ComponentStatus>;

/** 002 §2.2, written by the status service about every 10 s. */
export const StatusSnapshot = z.object({
  overall: z.enum(['ok', 'degraded', 'down']),
  host: z.object({
    cpu: z.number().min(0).max(1),
    load: z.tuple([z.number().nonnegative(), z.number().nonnegative(), z.number().nonnegative()]),
    mem: z.object({ usedMb: z.number().nonnegative(), totalMb: z.number().positive() }),
    uptime: count,
  }),
  components: z.array(ComponentStatus),
  /** Not in 002 §2.2's table; when the snapshot was taken (ISO 8601), for staleness checks. */
  generated_at: z.iso.datetime(),
});
export type StatusSnapshot = z.infer<typeof StatusSnapshot>;
