// Routes a request to /start or /exchange and turns every failure into the one error body with
// the protective headers; anything unexpected is a 500, never a client-fault code.
import { BrokerError } from './broker-error.ts';
import { clientIpOf } from './client-ip.ts';
import { clockFor } from './clock.ts';
import { handleExchange } from './exchange-handler.ts';
import { logEvent } from './log.ts';
import { errorResponse, preflightResponse } from './responses.ts';
import { type BrokerDeps, handleStart } from './start-handler.ts';

const ROUTES = { start: handleStart, exchange: handleExchange } as const;

function routeOf(pathname: string): keyof typeof ROUTES | undefined {
  const last = /\/(start|exchange)\/?$/.exec(pathname)?.[1];
  return last as keyof typeof ROUTES | undefined;
}

export async function routeRequest(request: Request, deps: BrokerDeps): Promise<Response> {
  const route = routeOf(new URL(request.url).pathname);
  try {
    if (!route) throw new BrokerError('not_found', 'no such route');
    if (request.method === 'OPTIONS') return preflightResponse();
    if (request.method !== 'POST') throw new BrokerError('method_not_allowed', request.method);
    const clock = clockFor(request, deps.config.testClock);
    const clientIp = clientIpOf(
      request.headers,
      deps.config.clientIpHeader,
      deps.config.trustedProxyHops,
    );
    return await ROUTES[route](request, deps, clock, clientIp);
  } catch (error) {
    const failure = error instanceof BrokerError
      ? error
      : new BrokerError('server_error', 'unexpected failure', { cause: error });
    logEvent('request_failed', {
      route: route ?? null,
      code: failure.code,
      reason: failure.reason,
      cause: failure.status >= 500 ? String(failure.cause) : undefined,
    });
    return errorResponse(failure);
  }
}
