// The companion app's call to the broker (000 §1 step 4, §4.3): POST /exchange with the code and
// the verifier, answered by a real session (000 §2.5).
import { CompanionHandoffError } from './companion-handoff-error.ts';

/** 000 §2.5: the session result of a successful exchange. */
export interface HandoffSession {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user_id: string;
  email: string;
  /** The `client_id` that vouched for the user. */
  login_source: string;
}

export interface ExchangeRequest {
  /** `{base_url}/functions/v1/federation-broker`. */
  brokerUrl: string;
  code: string;
  code_verifier: string;
  fetch?: typeof fetch;
  /** Default 10 000 ms. */
  timeoutMs?: number;
}

const STRING_FIELDS = [
  'access_token',
  'refresh_token',
  'user_id',
  'email',
  'login_source',
] as const;

function errorForStatus(status: number): CompanionHandoffError {
  switch (status) {
    case 400:
      return new CompanionHandoffError('invalid_request', 'The broker rejected the request', {
        status,
      });
    case 401:
      return new CompanionHandoffError('verifier_mismatch', 'The verifier does not match', {
        status,
      });
    case 410:
      return new CompanionHandoffError(
        'code_expired',
        'The hand-off code was used, expired or unknown; start again from the partner app',
        { status },
      );
    case 429:
      return new CompanionHandoffError('rate_limited', 'Too many hand-offs; try again later', {
        status,
      });
    default:
      return new CompanionHandoffError('broker_unavailable', `The broker answered ${status}`, {
        status,
      });
  }
}

function asHandoffSession(body: unknown): HandoffSession | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const record = body as Record<string, unknown>;
  const complete =
    STRING_FIELDS.every((field) => typeof record[field] === 'string' && record[field] !== '') &&
    Number.isInteger(record.expires_in);
  if (!complete) return undefined;
  const session = {} as Record<string, unknown>;
  for (const field of [...STRING_FIELDS, 'expires_in']) session[field] = record[field];
  return session as unknown as HandoffSession;
}

/** 000 §4.3: `{ code, code_verifier }` in, the 2.5 session out; 000 §7 statuses become codes. */
export async function exchangeHandoffCode(request: ExchangeRequest): Promise<HandoffSession> {
  const doFetch = request.fetch ?? globalThis.fetch;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), request.timeoutMs ?? 10_000);
  let response: Response;
  try {
    response = await doFetch(`${request.brokerUrl.replace(/\/+$/, '')}/exchange`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: request.code, code_verifier: request.code_verifier }),
      signal: controller.signal,
      // The verifier must not follow a redirect to another host.
      redirect: 'error',
    });
  } catch (error) {
    throw new CompanionHandoffError('broker_unavailable', 'The broker could not be reached', {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw errorForStatus(response.status);
  }
  const session = asHandoffSession(await response.json().catch(() => undefined));
  if (!session) {
    throw new CompanionHandoffError(
      'invalid_response',
      'The broker answered /exchange without a session',
    );
  }
  return session;
}
