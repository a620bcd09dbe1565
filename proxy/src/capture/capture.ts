// One captured exchange as it becomes an `entries` row (docs/data-model.md, payload shape).
export interface Capture {
  /** The proxy's id for the exchange: with ts, the row's identity (stored once). */
  request_id: string;
  ts: string;
  kind: 'http' | 'websocket' | 'tunnel' | 'error';
  device_uuid: string | null;
  payload: Record<string, unknown>;
}
