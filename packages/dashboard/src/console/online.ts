// Online-ness derived from last seen, with the data model's one window (150 s,
// private.online_window(), docs/data-model.md): nothing stores an online flag.

export const ONLINE_WINDOW_MS = 150_000;

export function isOnline(device: { last_seen_at: string | null }, now: number): boolean {
  return !!device.last_seen_at && now - Date.parse(device.last_seen_at) < ONLINE_WINDOW_MS;
}
