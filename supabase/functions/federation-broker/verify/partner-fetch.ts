// Outbound calls to partner systems (users/me, JWKS): registered URLs only, public hosts only,
// no redirects followed (a 3xx could hand the user's token to another host), bounded time and
// body size (reference A2, A3, A7 item 16).
import { isPublicPartnerHost, isPublicResolvedAddress } from './partner-address.ts';

export const PARTNER_TIMEOUT_MS = 3_000;
export const PARTNER_MAX_BYTES = 64 * 1024;

export class PartnerFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PartnerFetchError';
  }
}

export interface PartnerResponse {
  status: number;
  headers: Headers;
  body: Uint8Array<ArrayBuffer>;
}

/** A DNS lookup of A or AAAA records; Deno.resolveDns where the runtime has it. */
export type ResolveAddresses = (hostname: string, type: 'A' | 'AAAA') => Promise<string[]>;

const denoResolver: ResolveAddresses | undefined = typeof Deno?.resolveDns === 'function'
  ? (hostname, type) => Deno.resolveDns(hostname, type)
  : undefined;

/**
 * https to a public host only. The local stack's exception (`allowLocal`, never on a hosted
 * project) admits http and loopback hosts for the tests' stand-ins, never private networks.
 */
export function assertPartnerUrl(url: URL, allowLocal: boolean): void {
  if (url.protocol !== 'https:' && !(allowLocal && url.protocol === 'http:')) {
    throw new PartnerFetchError(`partner URL scheme ${url.protocol} is not allowed`);
  }
  if (url.username || url.password || !isPublicPartnerHost(url.hostname, allowLocal)) {
    throw new PartnerFetchError('partner URL host is not a public address');
  }
}

/**
 * A name that resolves to a non-public address is refused too. Best effort: the fetch resolves
 * again, so a rebinding DNS server can still win the race; the runtime's egress policy is the
 * last line. A lookup that fails leaves the decision to the fetch, which then fails itself.
 */
export async function assertPartnerAddresses(
  url: URL,
  allowLocal: boolean,
  resolve: ResolveAddresses | undefined = denoResolver,
): Promise<void> {
  const host = url.hostname;
  if (!resolve || host.startsWith('[') || /^[\d.]+$/.test(host)) return;
  const answers = await Promise.all(
    (['A', 'AAAA'] as const).map((type) => resolve(host, type).catch(() => [] as string[])),
  );
  if (answers.flat().some((address) => !isPublicResolvedAddress(address, allowLocal))) {
    throw new PartnerFetchError('partner host resolves to a non-public address');
  }
}

export async function fetchFromPartner(
  url: URL,
  init: RequestInit,
  allowLocal: boolean,
): Promise<PartnerResponse> {
  assertPartnerUrl(url, allowLocal);
  await assertPartnerAddresses(url, allowLocal);
  let response: Response;
  try {
    response = await fetch(url, {
      ...init,
      redirect: 'manual',
      signal: AbortSignal.timeout(PARTNER_TIMEOUT_MS),
    });
  } catch (cause) {
    throw new PartnerFetchError('partner unreachable or too slow', { cause });
  }
  const body = await readBounded(response);
  return { status: response.status, headers: response.headers, body };
}

async function readBounded(response: Response): Promise<Uint8Array<ArrayBuffer>> {
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > PARTNER_MAX_BYTES) throw new PartnerFetchError('partner response too large');
      chunks.push(value);
    }
  } catch (cause) {
    if (cause instanceof PartnerFetchError) throw cause;
    throw new PartnerFetchError('partner response unreadable', { cause });
  } finally {
    reader.cancel().catch(() => {});
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return body;
}
