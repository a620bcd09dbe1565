// "Does the phone's traffic arrive?": polls the device's set-up status (`GET <setup url>/status`,
// served by the capture proxy, docs/proxy.md) until the proxy has seen the device or the time is
// up, and says how it came (plain HTTP, TLS, a tunnel) or what went wrong (a CA refused).

export type SetupConnection = 'http' | 'https' | 'tunnel' | 'websocket';
export type SetupListener = 'device-port' | 'shared-port';

export interface CaProblem {
  host: string;
  at: string;
  reason: string;
}

/** The proxy's answer, as it spells it on the wire. */
export interface SetupStatus {
  seen: boolean;
  lastSeenAt: string | null;
  connection: SetupConnection | null;
  listener: SetupListener | null;
  caProblem: CaProblem | null;
}

export type TrafficCheck =
  | {
      seen: true;
      connection: SetupConnection | null;
      listener: SetupListener | null;
      lastSeenAt: string | null;
    }
  | {
      seen: false;
      /** A TLS handshake the phone refused (the CA is not installed yet), if one was seen. */
      caProblem: CaProblem | null;
      /** Why the last poll failed, when the status could not be read at all. */
      lastError: string | null;
    };

export interface TrafficCheckOptions {
  /** `<PROXY_SETUP_URL>/setup/<token>/status`. */
  statusUrl: string;
  timeoutMs?: number;
  intervalMs?: number;
  signal?: AbortSignal;
}

/** One status request may take this long; a proxy that hangs does not stall the whole check. */
const REQUEST_LIMIT_MS = 5_000;

export function statusUrlOf(setupUrl: string): string {
  return `${setupUrl.replace(/\/+$/, '')}/status`;
}

export async function waitForSetupTraffic(options: TrafficCheckOptions): Promise<TrafficCheck> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const interval = options.intervalMs ?? 500;
  let caProblem: CaProblem | null = null;
  let lastError: string | null = null;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      const status = await readStatus(options.statusUrl, deadline, options.signal);
      lastError = null;
      caProblem = status.caProblem ?? caProblem;
      if (status.seen) {
        return {
          seen: true,
          connection: status.connection,
          listener: status.listener,
          lastSeenAt: status.lastSeenAt,
        };
      }
    } catch (error) {
      if (options.signal?.aborted) throw error;
      lastError = error instanceof Error ? error.message : String(error);
    }
    // A poll started at the deadline would only time out on itself.
    if (Date.now() + interval >= deadline) return { seen: false, caProblem, lastError };
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

async function readStatus(
  url: string,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<SetupStatus> {
  const limit = AbortSignal.timeout(Math.max(1, Math.min(REQUEST_LIMIT_MS, deadline - Date.now())));
  const response = await fetch(url, {
    headers: { accept: 'application/json' },
    signal: signal ? AbortSignal.any([signal, limit]) : limit,
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`the set-up status answered HTTP ${response.status}`);
  }
  const body = (await response.json()) as Partial<SetupStatus> | null;
  if (typeof body?.seen !== 'boolean')
    throw new Error('the set-up status is not the expected JSON');
  return {
    seen: body.seen,
    lastSeenAt: typeof body.lastSeenAt === 'string' ? body.lastSeenAt : null,
    connection: body.connection ?? null,
    listener: body.listener ?? null,
    caProblem: body.caProblem ?? null,
  };
}
