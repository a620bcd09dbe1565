// The partner side of the one-tap hand-off (000 §1 steps 1-3, §4.4): mint a PKCE pair, call the
// broker's /start with the partner's own credential, build the deep link and open it. One file
// with no imports: it is the React Native helper as is, and the web script is generated from it.

/** 000 §4.1 `target`: the custom scheme (`ios`) or the dual app/web link (`universal`). */
export type HandoffTarget = 'ios' | 'universal';

/** 000 §2.4: what the partner backend signs in verify mode `hmac`. */
export interface HmacPayload {
  sub: string;
  email: string;
  iat: number;
  jti: string;
  /**
   * The /start request's challenge. Required by clients onboarded with `hmac_binds_challenge`
   * (recommended): a leaked assertion is then useless with any other PKCE pair.
   */
  code_challenge?: string;
}

/** 000 §4.1: exactly one credential, the one that matches the client's verify mode. */
export type StartCredential =
  | { backend_token: string }
  | { payload: HmacPayload; signature: string }
  | { hosted_token: string };

export interface PkcePair {
  code_verifier: string;
  code_challenge: string;
  code_challenge_method: 'S256';
}

/** Platform pieces a runtime may lack (React Native has no WebCrypto of its own). */
export interface CryptoSource {
  /** CSPRNG, e.g. `crypto.getRandomValues` (react-native-get-random-values on React Native). */
  getRandomValues?: (bytes: Uint8Array) => Uint8Array;
  /** SHA-256; default WebCrypto's `subtle.digest`, else the pure implementation below. */
  sha256?: (bytes: Uint8Array) => Promise<Uint8Array>;
}

/** What /start needs besides the PKCE pair and the credential. */
export interface StartOptions {
  /** `{base_url}/functions/v1/federation-broker` (000 preamble). */
  brokerUrl: string;
  /** The partner's registered client, `svc_…` (000 §2.2). */
  clientId: string;
  /** Default `universal`: a verified https link cannot be claimed by another app (RFC 8252 §7.2). */
  target?: HandoffTarget;
  fetch?: typeof fetch;
  /** Bound on the /start call (the code lives only 60 s, 000 §2.3). Default 10 000 ms. */
  timeoutMs?: number;
}

export interface HandoffOptions extends StartOptions, CryptoSource {
  /** The companion's custom scheme (or its alias), required for target `ios` (000 §4.2). */
  appScheme?: string;
  /** Pins the universal link's base; default the base of the link /start returned. */
  appLinkBase?: string;
  /** Returns the user's credential; it receives the challenge so a partner backend may bind it. */
  credential: (context: { code_challenge: string }) => Promise<StartCredential> | StartCredential;
  /** Opens the link; default `location.assign` in a browser. React Native: `Linking.openURL`. */
  openLink?: (link: string) => unknown;
}

export interface HandoffStarted {
  target: HandoffTarget;
  /** Seconds the code stays redeemable (60, 000 §4.1). */
  expires_in: number;
}

export type HandoffErrorCode =
  | 'invalid_options'
  | 'crypto_unavailable'
  | 'credential_failed'
  | 'invalid_request'
  | 'unauthorized'
  | 'rate_limited'
  | 'broker_unavailable'
  | 'invalid_response'
  | 'open_failed';

/**
 * The one error of the partner hand-off. Branch on `code`; `status` is the broker's HTTP status
 * where there was one. Messages never carry the verifier, the code or the credential.
 */
export class HandoffError extends Error {
  readonly code: HandoffErrorCode;
  readonly status: number | undefined;

  constructor(
    code: HandoffErrorCode,
    message: string,
    options?: { status?: number; cause?: unknown },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'HandoffError';
    this.code = code;
    this.status = options?.status;
  }
}

const CLIENT_ID_PATTERN = /^svc_[a-z0-9_]+$/;
// RFC 7636 §4.1: 43-128 characters of the unreserved set [A-Z] [a-z] [0-9] - . _ ~
const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;
// RFC 3986 §3.1; RFC 8252 §7.1 asks for a reverse-DNS name such as com.example.companion.
const SCHEME_PATTERN = /^[a-z][a-z0-9+.-]*$/;
const HANDOFF_PATH = '/app/auth/federation';
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** RFC 7636 §4.1 syntax of a code verifier. */
export function isCodeVerifier(value: unknown): value is string {
  return typeof value === 'string' && CODE_VERIFIER_PATTERN.test(value);
}

/** RFC 4648 §5 base64url without padding (RFC 7636 Appendix A). */
export function encodeBase64Url(bytes: Uint8Array): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out +=
      alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += alphabet[n >> 18] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63];
  }
  return out;
}

const SHA256_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/**
 * FIPS 180-4 SHA-256 in plain JavaScript, for runtimes without `crypto.subtle` (Hermes), so a
 * React Native partner needs no hashing package. Inputs here are at most 128 bytes.
 */
export function sha256(message: Uint8Array): Uint8Array {
  const paddedLength = Math.ceil((message.length + 9) / 64) * 64;
  const padded = new Uint8Array(paddedLength);
  padded.set(message);
  padded[message.length] = 0x80;
  const view = new DataView(padded.buffer);
  const bitLength = message.length * 8;
  view.setUint32(paddedLength - 8, Math.floor(bitLength / 0x100000000));
  view.setUint32(paddedLength - 4, bitLength >>> 0);
  const hash = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let block = 0; block < paddedLength; block += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(block + t * 4);
    for (let t = 16; t < 64; t++) {
      const w15 = w[t - 15];
      const w2 = w[t - 2];
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, b, c, d, e, f, g, h] = hash;
    for (let t = 0; t < 64; t++) {
      const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + s1 + ch + SHA256_K[t] + w[t]) >>> 0;
      const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) >>> 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    const state = [a, b, c, d, e, f, g, h];
    for (let i = 0; i < 8; i++) hash[i] = (hash[i] + state[i]) >>> 0;
  }
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  for (let i = 0; i < 8; i++) out.setUint32(i * 4, hash[i]);
  return digest;
}

async function digestSha256(bytes: Uint8Array, source: CryptoSource): Promise<Uint8Array> {
  if (source.sha256) return source.sha256(bytes);
  const subtle = globalThis.crypto?.subtle;
  // WebCrypto exists only in secure contexts and not on Hermes; the pure version is equivalent.
  if (subtle) return new Uint8Array(await subtle.digest('SHA-256', bytes));
  return sha256(bytes);
}

/**
 * 000 §2.1, RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))), hashing the verifier string's
 * own bytes, never a decoded value, so it matches the broker's transform byte for byte.
 */
export async function computeCodeChallenge(
  codeVerifier: string,
  source: CryptoSource = {},
): Promise<string> {
  if (!isCodeVerifier(codeVerifier)) {
    throw new HandoffError(
      'invalid_options',
      'The code verifier is not 43-128 unreserved characters (RFC 7636 §4.1)',
    );
  }
  const ascii = new Uint8Array(codeVerifier.length);
  for (let i = 0; i < codeVerifier.length; i++) ascii[i] = codeVerifier.charCodeAt(i);
  return encodeBase64Url(await digestSha256(ascii, source));
}

/** 000 §2.1: 32 CSPRNG bytes, base64url, 43 characters (RFC 7636 §4.1's recommendation). */
export function createCodeVerifier(source: CryptoSource = {}): string {
  const crypto = globalThis.crypto;
  const getRandomValues =
    source.getRandomValues ??
    (crypto?.getRandomValues ? (b: Uint8Array) => crypto.getRandomValues(b) : undefined);
  // Never fall back to Math.random: a guessable verifier defeats PKCE.
  if (!getRandomValues) {
    throw new HandoffError(
      'crypto_unavailable',
      'No crypto.getRandomValues: install react-native-get-random-values or pass getRandomValues',
    );
  }
  const bytes = getRandomValues(new Uint8Array(32));
  return encodeBase64Url(bytes);
}

/** 000 §1 step 1: a fresh PKCE pair, minted on the device and kept only in memory. */
export async function createPkcePair(source: CryptoSource = {}): Promise<PkcePair> {
  const code_verifier = createCodeVerifier(source);
  const code_challenge = await computeCodeChallenge(code_verifier, source);
  return { code_verifier, code_challenge, code_challenge_method: 'S256' };
}

function credentialFields(credential: StartCredential): StartCredential {
  const c = credential as Partial<Record<string, unknown>>;
  if (typeof c.backend_token === 'string' && c.backend_token !== '') {
    return { backend_token: c.backend_token };
  }
  if (typeof c.hosted_token === 'string' && c.hosted_token !== '') {
    return { hosted_token: c.hosted_token };
  }
  if (
    typeof c.signature === 'string' &&
    c.signature !== '' &&
    c.payload &&
    typeof c.payload === 'object'
  ) {
    return { payload: c.payload as HmacPayload, signature: c.signature };
  }
  throw new HandoffError(
    'credential_failed',
    'The credential has none of backend_token, payload+signature or hosted_token (000 §4.1)',
  );
}

async function postJson(
  url: string,
  body: unknown,
  options: Pick<StartOptions, 'fetch' | 'timeoutMs'>,
): Promise<Response> {
  const doFetch = options.fetch ?? globalThis.fetch;
  // AbortController rather than AbortSignal.timeout: older React Native lacks the latter.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 10_000);
  try {
    return await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
      // A redirect could carry the credential to another host; the broker never redirects.
      redirect: 'error',
    });
  } catch (error) {
    throw new HandoffError('broker_unavailable', 'The broker could not be reached', {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

function errorForStatus(status: number): HandoffError {
  // 000 §7: 400 bad request or missing credential, 401 unknown/disabled client or credential
  // rejected (opaque on purpose), 429 rate limited.
  if (status === 400) {
    return new HandoffError('invalid_request', 'The broker rejected the request', { status });
  }
  if (status === 401) {
    return new HandoffError('unauthorized', 'The broker rejected the client or the credential', {
      status,
    });
  }
  if (status === 429) {
    return new HandoffError('rate_limited', 'Too many hand-offs; try again later', { status });
  }
  return new HandoffError('broker_unavailable', `The broker answered ${status}`, { status });
}

export interface StartResult {
  /** The broker's link `{app_link_base}/app/auth/federation?code=<code>` (000 §4.1). */
  link: string;
  code: string;
  expires_in: number;
  target: HandoffTarget;
}

/** 000 §1 step 2, §4.1: POST /start; the answer is a link with a code, never a token. */
export async function requestHandoffCode(
  options: StartOptions,
  pair: PkcePair,
  credential: StartCredential,
): Promise<StartResult> {
  const target = options.target ?? 'universal';
  const response = await postJson(
    `${options.brokerUrl.replace(/\/+$/, '')}/start`,
    {
      client_id: options.clientId,
      code_challenge: pair.code_challenge,
      code_challenge_method: pair.code_challenge_method,
      target,
      // 000 §4.1: the token goes in the body (which wins over the header), never in a URL (§1 rule 5).
      ...credentialFields(credential),
    },
    options,
  );
  if (response.status !== 200) {
    await response.body?.cancel();
    throw errorForStatus(response.status);
  }
  const body = (await response.json().catch(() => undefined)) as
    | Record<string, unknown>
    | undefined;
  const link = typeof body?.link === 'string' ? parseUrl(body.link) : undefined;
  const code = link?.searchParams.get('code');
  if (!link || !code || body?.target !== target || !Number.isInteger(body?.expires_in)) {
    throw new HandoffError('invalid_response', 'The broker answered /start without a usable link');
  }
  return { link: link.href, code, expires_in: body.expires_in as number, target };
}

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** The universal-link base: https, or http on a loopback host for local development. */
function universalBase(value: string): string {
  const url = parseUrl(value);
  const secure =
    url?.protocol === 'https:' || (url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
  if (!url || !secure || url.search || url.hash || url.username || url.password) {
    throw new HandoffError(
      'invalid_options',
      'The app link base must be an https URL without query or fragment',
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

export interface LinkParts {
  target: HandoffTarget;
  code: string;
  code_verifier: string;
  /** Required for `ios`. */
  appScheme?: string;
  /** Required for `universal`: `{app_link_base}`, without `/app/auth/federation`. */
  appLinkBase?: string;
}

/**
 * 000 §4.2: `{app_scheme}://auth/federation?code=…#fed_verifier=…` or the universal equivalent.
 * The code rides in the query; the verifier only in the fragment, which no HTTP request or
 * Referer ever carries (000 §1 rule 2).
 */
export function buildHandoffLink(parts: LinkParts): string {
  if (!isCodeVerifier(parts.code_verifier)) {
    throw new HandoffError(
      'invalid_options',
      'The code verifier is not 43-128 unreserved characters (RFC 7636 §4.1)',
    );
  }
  const query = `?code=${encodeURIComponent(parts.code)}`;
  const fragment = `#fed_verifier=${encodeURIComponent(parts.code_verifier)}`;
  if (parts.target === 'ios') {
    const scheme = parts.appScheme?.toLowerCase();
    if (!scheme || !SCHEME_PATTERN.test(scheme) || scheme === 'http' || scheme === 'https') {
      throw new HandoffError(
        'invalid_options',
        'Target ios needs appScheme, the companion app’s custom URL scheme',
      );
    }
    return `${scheme}://auth/federation${query}${fragment}`;
  }
  if (parts.target === 'universal') {
    if (!parts.appLinkBase)
      throw new HandoffError('invalid_options', 'Target universal needs the app link base');
    return `${universalBase(parts.appLinkBase)}${HANDOFF_PATH}${query}${fragment}`;
  }
  throw new HandoffError('invalid_options', 'target must be ios or universal (000 §4.1)');
}

/** The `{app_link_base}` of the broker's link, which always ends in /app/auth/federation. */
function appLinkBaseOf(link: string): string {
  const url = new URL(link);
  if (!url.pathname.endsWith(HANDOFF_PATH)) {
    throw new HandoffError(
      'invalid_response',
      'The broker’s link does not point at /app/auth/federation',
    );
  }
  return `${url.origin}${url.pathname.slice(0, -HANDOFF_PATH.length)}`;
}

function assertOptions(options: HandoffOptions): void {
  if (!CLIENT_ID_PATTERN.test(options.clientId ?? '')) {
    throw new HandoffError('invalid_options', 'clientId must match ^svc_[a-z0-9_]+$ (000 §2.2)');
  }
  const broker = parseUrl(options.brokerUrl ?? '');
  if (
    !broker ||
    (broker.protocol !== 'https:' &&
      !(broker.protocol === 'http:' && LOOPBACK_HOSTS.has(broker.hostname)))
  ) {
    throw new HandoffError(
      'invalid_options',
      'brokerUrl must be an https URL (http only on loopback)',
    );
  }
  const target = options.target ?? 'universal';
  if (target !== 'ios' && target !== 'universal') {
    throw new HandoffError('invalid_options', 'target must be ios or universal (000 §4.1)');
  }
  if (target === 'ios' && !options.appScheme) {
    throw new HandoffError(
      'invalid_options',
      'Target ios needs appScheme, the companion app’s custom URL scheme',
    );
  }
  if (typeof options.credential !== 'function') {
    throw new HandoffError(
      'invalid_options',
      'credential must be a function returning the user’s credential',
    );
  }
}

function defaultOpener(): (link: string) => unknown {
  const location = (globalThis as { location?: { assign(url: string): void } }).location;
  if (!location) {
    throw new HandoffError(
      'open_failed',
      'No browser location: pass openLink (Linking.openURL on React Native)',
    );
  }
  return (link) => location.assign(link);
}

/**
 * The whole partner side, for the partner's "Open in companion" button: PKCE pair, /start, link,
 * open (000 §1 steps 1-3). The verifier lives only in this call and the opened link's fragment.
 */
export async function handOffToCompanion(options: HandoffOptions): Promise<HandoffStarted> {
  assertOptions(options);
  const open = options.openLink ?? defaultOpener();
  const pair = await createPkcePair(options);
  let credential: StartCredential;
  try {
    credential = await options.credential({ code_challenge: pair.code_challenge });
  } catch (error) {
    throw new HandoffError('credential_failed', 'The partner credential could not be obtained', {
      cause: error,
    });
  }
  const started = await requestHandoffCode(options, pair, credential);
  const link = buildHandoffLink({
    target: started.target,
    code: started.code,
    code_verifier: pair.code_verifier,
    appScheme: options.appScheme,
    // 000 §4.1: only the code of the broker's link is needed; its base is a default for universal.
    appLinkBase:
      started.target === 'universal'
        ? (options.appLinkBase ?? appLinkBaseOf(started.link))
        : undefined,
  });
  try {
    // 000 §4.2: open promptly, the code lives 60 s.
    await open(link);
  } catch (error) {
    throw new HandoffError('open_failed', 'The hand-off link could not be opened', {
      cause: error,
    });
  }
  return { target: started.target, expires_in: started.expires_in };
}

/**
 * For partners whose own backend produces the credential (000 §4.4's "own backend base
 * address"): POST {backendBaseUrl}{path} with the user's session and the challenge, answered by
 * one of the three credential shapes. Keeps an HMAC secret on the server, never on the device.
 */
export function credentialFromPartnerBackend(config: {
  backendBaseUrl: string;
  path?: string;
  headers?: () => Promise<Record<string, string>> | Record<string, string>;
  fetch?: typeof fetch;
  timeoutMs?: number;
}): HandoffOptions['credential'] {
  return async ({ code_challenge }) => {
    const url = `${config.backendBaseUrl.replace(/\/+$/, '')}${config.path ?? '/federation/credential'}`;
    const doFetch = config.fetch ?? globalThis.fetch;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), config.timeoutMs ?? 10_000);
    try {
      const response = await doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await config.headers?.()) },
        body: JSON.stringify({ code_challenge }),
        signal: controller.signal,
        redirect: 'error',
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new HandoffError(
          'credential_failed',
          `The partner backend answered ${response.status}`,
          {
            status: response.status,
          },
        );
      }
      return credentialFields((await response.json()) as StartCredential);
    } finally {
      clearTimeout(timer);
    }
  };
}
