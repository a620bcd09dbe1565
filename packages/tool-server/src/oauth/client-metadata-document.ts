// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; the MCP 2026-07-28
// revision's preferred registration): a client_id that is an https URL names a JSON document of
// client metadata that we fetch, check and cache instead of a DCR registration.
// Fetching is guarded against SSRF: https only, public addresses only (checked on the address we
// actually connect to, so DNS rebinding cannot swap it), no redirects, 5 s, 64 KiB.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, fetch } from 'undici';
import { type AcceptedClientMetadata, acceptClientMetadata } from './client-metadata.ts';
import { OAuthError } from './oauth-error.ts';
import { isPublicAddress } from './public-address.ts';

const MAX_DOCUMENT_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
/** Cache bounds: honour the document's max-age within [1 min, 24 h]; 1 h when it gives none. */
const MIN_CACHE_SECONDS = 60;
const MAX_CACHE_SECONDS = 86_400;
const DEFAULT_CACHE_SECONDS = 3_600;

/** Whether a client_id is meant as a metadata document URL (rather than a registered id). */
export function isMetadataDocumentClientId(clientId: string): boolean {
  return /^https:\/\//i.test(clientId);
}

/** The draft's §3 rules for the client_id URL itself. */
export function metadataDocumentUrlProblem(clientId: string): string | undefined {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:') return 'must use https';
  if (url.username || url.password) return 'must not contain user information';
  if (clientId.includes('#')) return 'must not contain a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'must contain a path';
  if (/\/\.\.?(\/|$)/.test(clientId.replace(/^https:\/\/[^/]+/i, ''))) {
    return 'must not contain dot segments';
  }
  if (url.href !== clientId) return 'must be in normalised form';
  return undefined;
}

export interface FetchedClientDocument {
  metadata: AcceptedClientMetadata;
  expiresAt: Date;
}

export interface MetadataDocumentFetcherOptions {
  allowPrivateAddresses: boolean;
  extraCa?: string;
}

function cacheSeconds(cacheControl: string | null): number {
  if (cacheControl && /\b(no-store|no-cache)\b/i.test(cacheControl)) return MIN_CACHE_SECONDS;
  const maxAge = cacheControl ? /\bmax-age=(\d+)/i.exec(cacheControl) : null;
  const seconds = maxAge ? Number(maxAge[1]) : DEFAULT_CACHE_SECONDS;
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, seconds));
}

export class MetadataDocumentFetcher {
  private readonly agent: Agent;
  private readonly allowPrivateAddresses: boolean;

  constructor(options: MetadataDocumentFetcherOptions) {
    this.allowPrivateAddresses = options.allowPrivateAddresses;
    const guardedLookup = (
      hostname: string,
      lookupOptions: { all?: boolean },
      callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
    ) => {
      dnsLookup(hostname, { all: true }, (error, addresses) => {
        if (error) return callback(error, []);
        const allowed = addresses.filter(
          (entry) => options.allowPrivateAddresses || isPublicAddress(entry.address),
        );
        if (allowed.length === 0 || allowed.length !== addresses.length) {
          return callback(new Error(`${hostname} resolves to a non-public address`), []);
        }
        if (lookupOptions.all) return callback(null, allowed);
        const first = allowed[0] as LookupAddress;
        return callback(null, first.address, first.family);
      });
    };
    this.agent = new Agent({
      connect: {
        lookup: guardedLookup as never,
        ...(options.extraCa ? { ca: options.extraCa } : {}),
        timeout: FETCH_TIMEOUT_MS,
      },
      headersTimeout: FETCH_TIMEOUT_MS,
      bodyTimeout: FETCH_TIMEOUT_MS,
    });
  }

  /** Fetches and validates the document; invalid_client with the reason when it cannot be used. */
  async fetchDocument(clientId: string): Promise<FetchedClientDocument> {
    const problem = metadataDocumentUrlProblem(clientId);
    if (problem) throw new OAuthError('invalid_client', `The client_id URL ${problem}.`);
    // An IP literal is connected to without a lookup, so the guard in the lookup never sees it.
    const literal = new URL(clientId).hostname.replace(/^\[|\]$/g, '');
    if (isIP(literal) && !this.allowPrivateAddresses && !isPublicAddress(literal)) {
      throw new OAuthError(
        'invalid_client',
        `The client metadata document could not be fetched (${literal} is a non-public address).`,
      );
    }
    let body: string;
    let cacheControl: string | null;
    try {
      const response = await fetch(clientId, {
        dispatcher: this.agent,
        redirect: 'manual',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`answered ${response.status}`);
      }
      body = await readBounded(response.body);
      cacheControl = response.headers.get('cache-control');
    } catch (error) {
      throw new OAuthError(
        'invalid_client',
        `The client metadata document could not be fetched (${(error as Error).message}).`,
        { cause: error },
      );
    }
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch (error) {
      throw new OAuthError('invalid_client', 'The client metadata document is not JSON.', {
        cause: error,
      });
    }
    return {
      metadata: checkDocument(clientId, document),
      expiresAt: new Date(Date.now() + cacheSeconds(cacheControl) * 1000),
    };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

async function readBounded(stream: ReadableStream<Uint8Array> | null): Promise<string> {
  if (!stream) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.byteLength;
    if (size > MAX_DOCUMENT_BYTES) throw new Error(`larger than ${MAX_DOCUMENT_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The draft's §4 checks on the document's content. */
function checkDocument(clientId: string, document: unknown): AcceptedClientMetadata {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new OAuthError('invalid_client', 'The client metadata document is not a JSON object.');
  }
  const fields = document as Record<string, unknown>;
  if (fields.client_id !== clientId) {
    throw new OAuthError('invalid_client', 'The document client_id does not equal its URL.');
  }
  if ('client_secret' in fields || 'client_secret_expires_at' in fields) {
    throw new OAuthError('invalid_client', 'A client metadata document must not carry a secret.');
  }
  const method = fields.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    throw new OAuthError(
      'invalid_client',
      'Metadata-document clients are public: token_endpoint_auth_method must be none.',
    );
  }
  try {
    return acceptClientMetadata({ ...fields, token_endpoint_auth_method: 'none' });
  } catch (error) {
    if (error instanceof OAuthError) {
      throw new OAuthError('invalid_client', `The client metadata document: ${error.message}`);
    }
    throw error;
  }
}
