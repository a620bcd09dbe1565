// verify_mode backend_bearer (000 §4.1): the identity comes only from a live
// GET {backend_base_url}/users/me with the user's token; any failure rejects (fail closed).
import { BrokerError } from '../broker-error.ts';
import { fetchFromPartner, PartnerFetchError } from './partner-fetch.ts';
import { emailClaims, type PartnerIdentity } from './partner-identity.ts';

export async function verifyBackendBearer(
  token: string,
  backendBaseUrl: string,
  allowHttp: boolean,
): Promise<PartnerIdentity> {
  const url = new URL(`${backendBaseUrl.replace(/\/+$/, '')}/users/me`);
  let answer: Awaited<ReturnType<typeof fetchFromPartner>>;
  try {
    answer = await fetchFromPartner(
      url,
      { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } },
      allowHttp,
    );
  } catch (cause) {
    if (cause instanceof PartnerFetchError) {
      throw new BrokerError('access_denied', `users/me failed: ${cause.message}`, { cause });
    }
    throw cause;
  }
  // Only 200 vouches for the user: 3xx (never followed), 4xx and 5xx all reject.
  if (answer.status !== 200) {
    throw new BrokerError('access_denied', `users/me answered ${answer.status}`);
  }
  let user: unknown;
  try {
    user = JSON.parse(new TextDecoder().decode(answer.body));
  } catch (cause) {
    throw new BrokerError('access_denied', 'users/me is not JSON', { cause });
  }
  return identityFromUsersMe(user);
}

/** `{id | sub, email?, email_verified?}`; an e-mail marked unverified is not vouched for. */
export function identityFromUsersMe(user: unknown): PartnerIdentity {
  if (typeof user !== 'object' || user === null || Array.isArray(user)) {
    throw new BrokerError('access_denied', 'users/me is not an object');
  }
  const record = user as Record<string, unknown>;
  const id = record.id ?? record.sub;
  const sub = typeof id === 'number' && Number.isSafeInteger(id) ? String(id) : id;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 256) {
    throw new BrokerError('access_denied', 'users/me has no usable id');
  }
  return { sub, ...emailClaims(record) };
}
