// One captured exchange as it becomes an `entries` row (docs/data-model.md, payload shape).
import type { ConnectionInfo } from '../connection-info.ts';

export interface Capture {
  /** The proxy's id for the exchange: with ts, the row's identity (stored once). */
  request_id: string;
  ts: string;
  kind: 'http' | 'websocket' | 'tunnel' | 'error';
  device_uuid: string | null;
  payload: Record<string, unknown>;
}

/** The payload fields every capture takes from its connection: who, via which rule, and how. */
export function connectionFields(info: ConnectionInfo): Record<string, unknown> {
  return {
    client: info.client,
    listenerPort: info.listenerPort,
    attribution: { rule: info.attribution.rule, device_uuid: info.attribution.deviceUuid },
    source: info.source,
    ...(info.tls ? { tls: info.tls } : {}),
  };
}
