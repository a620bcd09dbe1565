// Component probes over each component's real interface (002 §2.2): an HTTP request, a
// WebSocket upgrade, or a Postgres query; each bounded in time and reduced to {up, httpStatus,
// latencyMs}.
import pg from 'pg';
import WebSocket from 'ws';
import type { ComponentStatus } from './snapshot-schemas.ts';

export type ProbeResult = ComponentStatus['probe'];

export type ComponentProbe =
  | { kind: 'http'; url: string; headers?: Record<string, string> }
  | { kind: 'websocket'; url: string }
  | { kind: 'postgres'; url: string };

const elapsed = (started: number) => Math.round((performance.now() - started) * 10) / 10;

/** Up when the component answers at all and not with a server error (status < 500). */
async function probeHttp(url: string, headers: Record<string, string>, timeoutMs: number) {
  const started = performance.now();
  try {
    const response = await fetch(url, {
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return { up: response.status < 500, httpStatus: response.status, latencyMs: elapsed(started) };
  } catch {
    return { up: false, httpStatus: 0, latencyMs: elapsed(started) };
  }
}

/** Up when the upgrade succeeds (101). */
function probeWebSocket(url: string, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { handshakeTimeout: timeoutMs });
    const finish = (result: ProbeResult) => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.terminate();
      resolve(result);
    };
    socket.on('open', () => finish({ up: true, httpStatus: 101, latencyMs: elapsed(started) }));
    socket.on('unexpected-response', (_request, response) =>
      finish({ up: false, httpStatus: response.statusCode ?? 0, latencyMs: elapsed(started) }),
    );
    socket.on('error', () => finish({ up: false, httpStatus: 0, latencyMs: elapsed(started) }));
  });
}

/** Up when `select 1` answers on a fresh connection; httpStatus is 0 (not HTTP). */
async function probePostgres(url: string, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now();
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    application_name: 'status-probe',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return { up: true, httpStatus: 0, latencyMs: elapsed(started) };
  } catch {
    return { up: false, httpStatus: 0, latencyMs: elapsed(started) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function runProbe(probe: ComponentProbe, timeoutMs: number): Promise<ProbeResult> {
  switch (probe.kind) {
    case 'http':
      return probeHttp(probe.url, probe.headers ?? {}, timeoutMs);
    case 'websocket':
      return probeWebSocket(probe.url, timeoutMs);
    case 'postgres':
      return probePostgres(probe.url, timeoutMs);
  }
}
