// A capture row as the proxy writes it (docs/proxy.md "The capture row"; docs/data-model.md).

export type HeaderPair = [string, string];

export type CaptureBody = {
  text?: string;
  base64?: string;
  encoding?: string;
  size?: number;
  truncated?: boolean;
  contentType?: string;
  contentEncoding?: string;
  decoded?: boolean;
  decodedSize?: number;
} | null;

export type CapturePayload = {
  method?: string;
  scheme?: string;
  host?: string;
  port?: number;
  path?: string;
  query?: string;
  url?: string;
  httpVersion?: string;
  statusCode?: number;
  statusText?: string;
  requestHeaders?: HeaderPair[];
  responseHeaders?: HeaderPair[];
  requestBody?: CaptureBody;
  responseBody?: CaptureBody;
  sizes?: {
    requestBody?: number;
    responseBody?: number;
    clientToServer?: number;
    serverToClient?: number;
  };
  timings?: Partial<Record<'connect' | 'tls' | 'send' | 'wait' | 'receive' | 'total', number>>;
  tls?: Record<string, unknown>;
  upstreamTls?: Record<string, unknown>;
  client?: { ip?: string; port?: number };
  listenerPort?: number;
  attribution?: { rule?: string; device_uuid?: string | null };
  source?: string;
  error?: unknown;
};

export type CaptureRow = {
  id: number;
  ts: string;
  kind: string;
  device_uuid: string | null;
  request_id?: string | null;
  payload: CapturePayload;
};

/** What a list row shows; read with a projection, or derived from a Realtime record. */
export type CaptureSummary = {
  id: number;
  ts: string;
  kind: string;
  device_uuid: string | null;
  method: string | null;
  host: string | null;
  url: string | null;
  status_code: number | null;
  duration_ms: number | null;
};

export const SUMMARY_COLUMNS = 'id,ts,kind,device_uuid,method,host,url,status_code,duration_ms';

/** A Realtime INSERT record (columns the subscriber may read) as a list row. */
export function summaryFromRecord(record: Record<string, unknown>): CaptureSummary | null {
  const id = Number(record.id);
  if (!Number.isSafeInteger(id) || typeof record.ts !== 'string') return null;
  const payload = (record.payload ?? {}) as CapturePayload;
  const status = typeof record.status_code === 'number' ? record.status_code : payload.statusCode;
  const total =
    typeof record.duration_ms === 'number' ? record.duration_ms : payload.timings?.total;
  return {
    id,
    ts: record.ts,
    kind: typeof record.kind === 'string' ? record.kind : 'http',
    device_uuid: typeof record.device_uuid === 'string' ? record.device_uuid : null,
    method: (record.method as string | undefined) ?? payload.method ?? null,
    host: (record.host as string | undefined) ?? payload.host ?? null,
    url: (record.url as string | undefined) ?? payload.url ?? null,
    status_code: typeof status === 'number' && status >= 100 && status <= 599 ? status : null,
    duration_ms: typeof total === 'number' && total >= 0 ? total : null,
  };
}

export function headerValue(headers: HeaderPair[] | undefined, name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers?.find(([key]) => key.toLowerCase() === lower)?.[1];
}
