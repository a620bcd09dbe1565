// Outbound calls to partner systems (users/me, JWKS): registered URLs only, no redirects
// followed (a 3xx could hand the user's token to another host), bounded time and body size
// (reference A2, A3).

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

/** https only, unless the local stack allows http for loopback stand-ins. */
export function assertPartnerUrl(url: URL, allowHttp: boolean): void {
  if (url.protocol === 'https:' || (allowHttp && url.protocol === 'http:')) return;
  throw new PartnerFetchError(`partner URL scheme ${url.protocol} is not allowed`);
}

export async function fetchFromPartner(
  url: URL,
  init: RequestInit,
  allowHttp: boolean,
): Promise<PartnerResponse> {
  assertPartnerUrl(url, allowHttp);
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
