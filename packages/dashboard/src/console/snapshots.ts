// The two feed snapshots as the dashboard reads them (002 §2.1, §2.2; the zod schemas of record
// are in @capture/status, kept out of the browser bundle). Plus the staleness rule of 002 §8.

export type StatsSnapshot = {
  total_devices: number;
  online_devices: number;
  total_entries: number;
  entries_1h: number;
  entries_24h: number;
  requests_per_sec: number;
  status_class_mix: Partial<Record<'1' | '2' | '3' | '4' | '5', number>>;
  source_mix: Record<string, number>;
  connection_type_mix: Record<string, number>;
  top_domains: { host: string; count: number }[];
  top_devices: { device_uuid: string; name: string; count: number }[];
  generated_at: string;
};

export type ComponentStatus = {
  key: string;
  label: string;
  probe: { up: boolean; httpStatus: number; latencyMs: number };
  unitState: string;
};

export type StatusSnapshot = {
  overall: 'ok' | 'degraded' | 'down';
  host: {
    cpu: number;
    load: [number, number, number];
    mem: { usedMb: number; totalMb: number };
    uptime: number;
  };
  components: ComponentStatus[];
  generated_at: string;
};

/** 002 §8: status is written about every 10 s; older than about 30 s means its service is down. */
export const STATUS_STALE_MS = 30_000;
/** Stats are recomputed every 60 s; "up to 60 s old is expected", so stale past two rounds. */
export const STATS_STALE_MS = 120_000;

export function ageMs(updatedAt: string, now: number): number {
  return Math.max(0, now - Date.parse(updatedAt));
}

/** 002 §2.2: unhealthy when the probe is down or the unit is not `active`. */
export function isHealthy(component: ComponentStatus): boolean {
  return component.probe.up && component.unitState === 'active';
}

export function formatDuration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}
