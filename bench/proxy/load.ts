// Load shapes for the proxy benchmark, with undici as the client (the client the reference
// measurements used): a closed loop of C concurrent keep-alive requests for D seconds, a
// sequence of requests each on a new connection, and an open loop at a fixed request rate.
import { Agent, type Dispatcher, ProxyAgent, request } from 'undici';
import { percentile } from '../percentile.ts';

export interface Route {
  /** The proxy to go through, or null for a direct connection. */
  proxyUrl: string | null;
  /** CA the client trusts for HTTPS (the origin's when direct, the proxy's when intercepted). */
  ca?: string;
  /** SNI name to send instead of the URL's host (first-hit certificate runs). */
  servername?: string;
  /** Offer HTTP/2 by ALPN (the HTTP/2 rows); HTTP/1.1 otherwise. */
  h2?: boolean;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** HTTP/1.1 both ways unless the route asks for h2, so every proxy is measured on one protocol. */
export function dispatcherFor(route: Route, connections = 64): Dispatcher {
  const tls = {
    ...(route.ca ? { ca: route.ca } : {}),
    ...(route.servername ? { servername: route.servername } : {}),
  };
  const allowH2 = route.h2 === true;
  if (!route.proxyUrl) return new Agent({ connections, allowH2, connect: tls });
  return new ProxyAgent({
    uri: route.proxyUrl,
    allowH2,
    connections,
    requestTls: tls,
    // Plain http:// goes in absolute form, as browsers and curl send it to a manual proxy.
    proxyTunnel: false,
  } as ProxyAgent.Options);
}

function summarize(latencies: number[], errors: number, seconds: number): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

async function timedRequest(url: string, dispatcher: Dispatcher): Promise<number> {
  const started = performance.now();
  const response = await request(url, { dispatcher });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
  return performance.now() - started;
}

export async function closedLoop(
  url: string,
  route: Route,
  concurrency: number,
  seconds: number,
): Promise<LoadResult> {
  const dispatcher = dispatcherFor(route, concurrency);
  // Warm-up: connections open and leaves signed before the clock starts.
  await Promise.all(Array.from({ length: concurrency }, () => timedRequest(url, dispatcher)));
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          latencies.push(await timedRequest(url, dispatcher));
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await dispatcher.close();
  return summarize(latencies, errors, elapsed);
}

/** `count` sequential requests, each on a fresh connection (CONNECT and TLS every time). */
export async function newConnectionEach(
  url: string,
  route: (index: number) => Route,
  count: number,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  for (let index = 0; index < count; index += 1) {
    const dispatcher = dispatcherFor(route(index), 1);
    try {
      latencies.push(await timedRequest(url, dispatcher));
    } catch {
      errors += 1;
    }
    await dispatcher.destroy();
  }
  return summarize(latencies, errors, (performance.now() - started) / 1000);
}

/** Requests started at a fixed rate whatever the answers do; returns what was sent and answered. */
export async function openLoop(
  url: (index: number) => string,
  route: Route,
  rate: number,
  seconds: number,
): Promise<LoadResult & { sent: number }> {
  const dispatcher = dispatcherFor(route, 256);
  const latencies: number[] = [];
  let errors = 0;
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const tickMs = 10;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due) {
      const index = sent;
      sent += 1;
      const pending = timedRequest(url(index), dispatcher).then(
        (latency) => {
          latencies.push(latency);
        },
        () => {
          errors += 1;
        },
      );
      inFlight.add(pending);
      void pending.finally(() => inFlight.delete(pending));
    }
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  await Promise.all(inFlight);
  const elapsed = (performance.now() - started) / 1000;
  await dispatcher.close();
  return { ...summarize(latencies, errors, elapsed), sent };
}
