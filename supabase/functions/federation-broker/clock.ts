// The broker's clock. Production reads the system time; a local stack started with
// FEDERATION_TEST_CLOCK=1 lets tests set the time per request (x-federation-test-now, epoch ms),
// which is how the 61 s expiry and the iat window edges are tested without waiting.
import { BrokerError } from './broker-error.ts';

export interface RequestClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** True when a test set the time: the SQL then uses it instead of now(). */
  injected: boolean;
}

export const TEST_CLOCK_HEADER = 'x-federation-test-now';

export function clockFor(request: Request, testClockEnabled: boolean): RequestClock {
  const header = request.headers.get(TEST_CLOCK_HEADER);
  if (!testClockEnabled || header === null) return { now: () => Date.now(), injected: false };
  const at = Number(header);
  if (!Number.isSafeInteger(at)) throw new BrokerError('invalid_request', 'bad test clock value');
  return { now: () => at, injected: true };
}
