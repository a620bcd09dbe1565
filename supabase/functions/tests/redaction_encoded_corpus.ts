// Secrets in encodings the redactor looks through (docs/redaction.md "Encoded secrets"), each
// case one capture in the shape of redaction_corpus.ts: an attack run planted these and read
// them back through inspect_requests. Used by redaction_test.ts, and under Node by
// redaction.test.ts and mcp-redaction-encodings.test.ts.
import {
  type CorpusCase,
  fake,
  findLeaks,
  HARMLESS_HEADER,
  readableTexts,
  secretForms,
} from './redaction_corpus.ts';

/** Which rule of docs/redaction.md "Encoded secrets" a case is for. */
export type EncodingGap = 'base64-run' | 'percent' | 'key-header' | 'transfer-encoding';

export interface EncodedCase extends CorpusCase {
  gap: EncodingGap;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BASE64URL = `${ALNUM}-_`;
const HEX = '0123456789abcdef';
const utf8 = new TextEncoder();
const join = (...parts: string[]) => parts.join('');

function base64OfBytes(bytes: Uint8Array | number[]): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function base64(text: string): string {
  return base64OfBytes(utf8.encode(text));
}

function base64url(text: string): string {
  return base64(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function jwt(claims: Record<string, unknown>, label: string): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  return `${header}.${base64url(JSON.stringify(claims))}.${fake(BASE64URL, 43, label)}`;
}

/** The payload and signature segments of a JWT: what a leak of it shows. */
function jwtParts(token: string): string[] {
  return token.split('.').slice(1);
}

// The fabricated secrets.
const BLOB_JWT = jwt({ sub: 'u-401', role: 'authenticated', exp: 1893456000 }, 'blob-jwt');
const CONFIG_STRIPE = join('sk', '_live_', fake(ALNUM, 40, 'enc-stripe'));
const CONFIG_JWT = jwt({ sub: 'u-402', scope: 'identity' }, 'config-jwt');
const STATE_PASSWORD = 'Corr3ct-Horse-Battery-Staple';
const LOG_API_KEY = `ak_${fake(ALNUM, 32, 'log-api-key')}`;
const PATH_JWT = jwt({ sub: 'u-403', purpose: 'refresh' }, 'path-jwt');
const QUERY_JWT = jwt({ sub: 'u-404', aud: 'export' }, 'query-jwt');
const QUERY_STRIPE_TAIL = fake(ALNUM, 32, 'query-stripe');
const FUNCTIONS_KEY = fake(BASE64URL, 54, 'functions-key');
const MASHAPE_KEY = fake(ALNUM, 50, 'mashape-key');
const TENANT_KEY = fake(HEX, 40, 'tenant-key');
const TRACE_KEY = fake(ALNUM, 48, 'trace-functions-key');
const PART_PASSWORD = 'Multipart-B64-Pa55-Pangolin-77';
const PART_JWT = jwt({ sub: 'u-405', scope: 'upload' }, 'part-jwt');
const QP_STRIPE_TAIL = fake(ALNUM, 32, 'qp-stripe');
const QP_JWT = jwt({ sub: 'u-406', scope: 'mail' }, 'qp-jwt');

// Base64 that must stay as it is: an image, a digest, a nonce, plain words.
const PNG_BASE64 = base64OfBytes([
  0x89,
  0x50,
  0x4e,
  0x47,
  0x0d,
  0x0a,
  0x1a,
  0x0a,
  0x00,
  0x00,
  0x00,
  0x0d,
  0x49,
  0x48,
  0x44,
  0x52,
  0x00,
  0x00,
  0x00,
  0x10,
  0x00,
  0x00,
  0x00,
  0x10,
  0x08,
  0x06,
  0x00,
  0x00,
  0x00,
  0x1f,
  0xf3,
  0xff,
]);
const DIGEST_BASE64 = base64OfBytes(
  Array.from(fake(HEX, 64, 'digest'), (char) => parseInt(char, 16) * 16 + 7),
);
const NONCE = 'dGhlIHNhbXBsZSBub25jZQ==';
const WORDS_BASE64 = base64('{"page":"/checkout","step":3,"label":"Pay now"}');

const MULTIPART_BOUNDARY = '----EncodedPartsBoundary9xQ2';

/** A capture payload as the proxy writes it (docs/proxy.md "The capture row"). */
function capture(overrides: Record<string, unknown>): Record<string, unknown> {
  const url = new URL(String(overrides.url ?? 'https://api.shop.example/v1/cart'));
  const extraRequest = (overrides.requestHeaders ?? []) as [string, string][];
  const extraResponse = (overrides.responseHeaders ?? []) as [string, string][];
  return {
    method: 'GET',
    scheme: url.protocol.slice(0, -1),
    host: url.hostname,
    port: 443,
    path: url.pathname,
    query: url.search.slice(1),
    httpVersion: 'HTTP/1.1',
    statusCode: 200,
    statusText: 'OK',
    requestBody: null,
    responseBody: null,
    sizes: { requestBody: 0, responseBody: 0 },
    timings: { connect: 0, tls: -1, send: 0.2, wait: 40, receive: 3, total: 43.4 },
    ...overrides,
    url: String(overrides.url ?? url.href),
    requestHeaders: [['Host', url.hostname], HARMLESS_HEADER, ...extraRequest],
    responseHeaders: [['Content-Type', 'application/json; charset=utf-8'], ...extraResponse],
  };
}

function textBody(text: string, contentType: string): Record<string, unknown> {
  return { text, encoding: 'utf8', size: utf8.encode(text).length, truncated: false, contentType };
}

const json = (value: unknown) => textBody(JSON.stringify(value), 'application/json');

/** A multipart body as the proxy stores it: base64 of its bytes (docs/proxy.md). */
function multipartBody(parts: [headers: string, content: string][]): Record<string, unknown> {
  const text = parts
    .map(([headers, content]) => `--${MULTIPART_BOUNDARY}\r\n${headers}\r\n\r\n${content}\r\n`)
    .join('') + `--${MULTIPART_BOUNDARY}--\r\n`;
  const bytes = utf8.encode(text);
  return {
    base64: base64OfBytes(bytes),
    encoding: 'base64',
    size: bytes.length,
    truncated: false,
    contentType: `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
  };
}

/** RFC 2045 §6.8 base64 lines of 76 characters. */
function wrapped(encoded: string): string {
  return (encoded.match(/.{1,76}/g) ?? []).join('\r\n');
}

export const ENCODED_CORPUS: EncodedCase[] = [
  {
    name: 'base64 in a JSON value: an Authorization header line with a JWT',
    gap: 'base64-run',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/telemetry',
      requestBody: json({
        event: 'sync',
        blob: base64(`Authorization: Bearer ${BLOB_JWT}`),
        thumb: PNG_BASE64,
        digest: DIGEST_BASE64,
        nonce: NONCE,
        view: WORDS_BASE64,
        count: 3,
      }),
    }),
    secrets: [BLOB_JWT, ...jwtParts(BLOB_JWT)],
    kinds: ['jwt'],
    // Base64 that decodes to no secret (an image, a digest, a nonce, plain JSON) stays.
    present: ['"event\\":\\"sync\\"', PNG_BASE64, DIGEST_BASE64, NONCE, WORDS_BASE64],
  },
  {
    name: 'base64 and base64url in JSON values: a Stripe secret key and a bare JWT',
    gap: 'base64-run',
    kind: 'http',
    payload: capture({
      url: 'https://api.shop.example/v1/bootstrap',
      responseBody: json({
        config: { payments: base64(CONFIG_STRIPE), identity: base64url(CONFIG_JWT) },
        theme: 'dark',
      }),
    }),
    secrets: [CONFIG_STRIPE, CONFIG_JWT, ...jwtParts(CONFIG_JWT)],
    kinds: ['stripe-key', 'jwt'],
    present: ['"theme\\":\\"dark\\"'],
  },
  {
    name: 'base64 of a form with password=… in an OAuth-style state value',
    gap: 'base64-run',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/resume',
      requestBody: json({ state: base64(`user=ada&password=${STATE_PASSWORD}`), lang: 'en' }),
    }),
    secrets: [STATE_PASSWORD],
    kinds: ['password'],
    present: ['"lang\\":\\"en\\"'],
  },
  {
    name: 'base64 inside a text/plain body: JSON with an API key in a log line',
    gap: 'base64-run',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://logs.shop.example/ingest',
      requestBody: textBody(
        `2026-11-25T10:00:00Z worker-3 retrying with ctx=${
          base64(JSON.stringify({ region: 'eu', api_key: LOG_API_KEY }))
        } (attempt 2)`,
        'text/plain',
      ),
    }),
    secrets: [LOG_API_KEY],
    kinds: ['api-key'],
    present: ['worker-3 retrying with ctx=', '(attempt 2)'],
  },
  {
    name: 'a JWT percent-encoded in the URL path (%2E for its dots)',
    gap: 'percent',
    kind: 'http',
    payload: capture({
      url: `https://api.shop.example/v2/sessions/${PATH_JWT.replace(/\./g, '%2E')}/refresh`,
    }),
    secrets: jwtParts(PATH_JWT),
    kinds: ['jwt'],
    present: ['https://api.shop.example/v2/sessions/[redacted:jwt:', ']/refresh'],
  },
  {
    name: 'a Bearer JWT double-encoded in a query value (%2520)',
    gap: 'percent',
    kind: 'http',
    payload: capture({
      url: `https://api.shop.example/v1/export?t=Bearer%2520${QUERY_JWT}&page=2`,
    }),
    secrets: [QUERY_JWT, ...jwtParts(QUERY_JWT)],
    kinds: ['jwt'],
    present: ['?t=Bearer%2520[redacted:jwt:', '&page=2'],
  },
  {
    name: 'a Stripe secret key double-encoded in a query value (%255F)',
    gap: 'percent',
    kind: 'http',
    payload: capture({
      url: join('https://api.shop.example/v1/report?ref=sk', '_live%255F', QUERY_STRIPE_TAIL),
    }),
    secrets: [QUERY_STRIPE_TAIL],
    kinds: ['stripe-key'],
    present: ['?ref=[redacted:stripe-key:'],
  },
  {
    name: 'an Azure Functions key and other *-key headers, and one in a curl trace',
    gap: 'key-header',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://shop-fn.azurewebsites.example/api/orders',
      requestHeaders: [
        ['x-functions-key', FUNCTIONS_KEY],
        ['X-Mashape-Key', MASHAPE_KEY],
        ['x_tenant_key', TENANT_KEY],
        ['Idempotency-Key', 'order-2026-11-25-0001'],
      ],
      requestBody: textBody(
        `> POST /api/orders HTTP/1.1\n> X-Functions-Key: ${TRACE_KEY}\n> Accept: */*\n`,
        'text/plain',
      ),
    }),
    secrets: [FUNCTIONS_KEY, MASHAPE_KEY, TENANT_KEY, TRACE_KEY],
    kinds: ['api-key'],
    present: [
      '["x-functions-key","[redacted:api-key:',
      '["Idempotency-Key","order-2026-11-25-0001"]',
      '> Accept: */*',
    ],
  },
  {
    name: 'multipart parts in base64: JSON with a password and a Bearer JWT, lines of 76',
    gap: 'transfer-encoding',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/uploads',
      requestBody: multipartBody([
        ['Content-Disposition: form-data; name="title"', 'Holiday photo'],
        [
          'Content-Disposition: form-data; name="metadata"\r\nContent-Type: application/json\r\n' +
          'Content-Transfer-Encoding: base64',
          wrapped(base64(JSON.stringify({
            album: 'Summer trip to the coast, with a long enough name to wrap',
            owner: { id: 'u-405', password: PART_PASSWORD },
          }))),
        ],
        [
          'Content-Disposition: form-data; name="notes"\r\nContent-Type: text/plain\r\n' +
          'Content-Transfer-Encoding: base64',
          wrapped(base64(`Upload retried; the client sent Authorization: Bearer ${PART_JWT}`)),
        ],
      ]),
    }),
    secrets: [PART_PASSWORD, PART_JWT, ...jwtParts(PART_JWT)],
    kinds: ['password', 'jwt'],
    present: ['Holiday photo', 'Content-Transfer-Encoding: base64'],
  },
  {
    name: 'a multipart part in quoted-printable: a key behind =5F, a JWT cut by a soft break',
    gap: 'transfer-encoding',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/messages',
      requestBody: multipartBody([
        [
          'Content-Disposition: form-data; name="body"\r\nContent-Type: text/plain; ' +
          'charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable',
          join('Caf=C3=A9 order; key sk=5Flive=5F', QP_STRIPE_TAIL, ' then\r\n') +
          `token ${QP_JWT.slice(0, 60)}=\r\n${QP_JWT.slice(60)} done`,
        ],
      ]),
    }),
    secrets: [QP_STRIPE_TAIL, QP_JWT.slice(60)],
    kinds: ['stripe-key', 'jwt'],
    present: ['Caf=C3=A9 order; key [redacted:stripe-key:', 'Content-Transfer-Encoding: quoted'],
  },
];

// A multipart part with a transfer encoding, in a readable text: its headers and content.
const ENCODED_PART =
  /Content-Transfer-Encoding:[ \t]*(base64|quoted-printable)[^]*?\r?\n\r?\n([^]*?)(?=\r?\n--|$)/gi;

/** The decoded content of every base64 and quoted-printable multipart part a reader sees. */
export function decodedPartTexts(value: unknown): string[] {
  const parts: string[] = [];
  for (const text of readableTexts(value)) {
    for (const [, encoding, content = ''] of text.matchAll(ENCODED_PART)) {
      const binary = encoding?.toLowerCase() === 'base64'
        ? atob(content.replace(/\s+/g, ''))
        : content.replace(/=\r?\n/g, '').replace(
          /=([0-9A-Fa-f]{2})/g,
          (_, hex: string) => String.fromCharCode(parseInt(hex, 16)),
        );
      parts.push(new TextDecoder().decode(Uint8Array.from(binary, (char) => char.charCodeAt(0))));
    }
  }
  return parts;
}

/** What a reader sees (readableText) and the decoded parts: to search for placeholders. */
export function readableEncodedText(value: unknown): string {
  return [...readableTexts(value), ...decodedPartTexts(value)].join('\n');
}

/**
 * The secrets a redacted value still shows, as findLeaks sees them, and also in the decoded
 * content of its base64 and quoted-printable multipart parts (decoded here independently of
 * the redactor, so a line break inside an encoded secret hides nothing from the check).
 */
export function findEncodedLeaks(redacted: unknown, secrets: string[]): string[] {
  const leaks = findLeaks(redacted, secrets);
  const parts = decodedPartTexts(redacted);
  for (const secret of secrets) {
    for (const form of secretForms(secret)) {
      if (parts.some((part) => part.includes(form))) {
        leaks.push(`${secret.slice(0, 12)}… in a decoded part as ${form.slice(0, 24)}…`);
      }
    }
  }
  return leaks;
}
